"""compare-mt's default analyses, as additive statistics rows and reductions over them.

`compare_mt_figures(refs, systems)` gives the figures of a default `compare-mt ref sys1 sys2 ...`
run (compare-mt 0.2.10, one reference per segment), equal to compare-mt's own:

1. corpus BLEU and length ratio per system (its "Aggregate Scores");
2. word F-measure (and precision, recall, counts) by reference-frequency bucket;
3. BLEU by reference-length bucket, with the number of segments in each bucket;
4. segment counts by hypothesis-minus-reference length bucket;
5. segment counts by sentence-BLEU bucket;
6. the n-gram difference analysis between the first two systems.

Every figure but the n-gram analysis is a reduction over per-segment rows of numbers whose
sums are meaningful (float64, one row per segment), so that bootstrap intervals and group
breakdowns can be had by summing weighted rows: `BucketTable.values_for(weights)` and
`WordAccuracyTable.accuracy_for(weights)` do it for one weight vector.

The definitions below are compare-mt's, not sacrebleu's; tests/test_comparemt.py checks
each against compare-mt itself. Do not "fix" them: the figures must be compare-mt's.

- **Lines and tokens.** A file is read as Python's text mode reads it (UTF-8; "\\n",
  "\\r\\n" and a lone "\\r" each end a line; see `read_lines`). A line is stripped of
  leading and trailing whitespace (`str.strip()`, so also NBSP, tabs, U+2028 at its ends)
  and split on the space character only (`tokenize`): a non-breaking space or a tab inside
  a line stays inside its token, two spaces make an empty token between them, and an empty
  line is one empty token. Matching is case-sensitive.
- **BLEU** (compare-mt's `BleuScorer`; `bleu_stats`, `bleu_score`). Per segment and order
  n = 1..4: clipped n-gram matches, and the hypothesis n-gram count *but at least 1*, so a
  segment shorter than n tokens adds 1 to the order-n denominator (sacrebleu adds 0). Over
  a corpus: 0 if there is no unigram match; otherwise an order whose precision is 0
  contributes log 1 = 0 instead of making the score 0 (no smoothing, the order is simply
  dropped from the geometric mean while keeping its weight 1/4); brevity penalty
  min(1, exp(1 - ref_len / hyp_len)); times 100.
- **Length ratio** (`LengthScorer`): hypothesis tokens / reference tokens (0 if the
  reference has none), not scaled.
- **Sentence BLEU** (`SentBleuScorer`, i.e. NLTK's `sentence_bleu` with Chen & Cherry's
  smoothing method 2, as NLTK >= 3.6 defines it; `sentence_bleu`): from the same segment
  row, 0 if there is no unigram match; otherwise precision of order 1 unsmoothed, orders
  2-4 as (matches + 1) / (count + 1) with the count at least 1 as above, combined with
  `math.fsum` of 0.25 * log p; brevity penalty 1 if hyp_len > ref_len, else
  exp(1 - ref_len / hyp_len); times 100. (NLTK < 3.6 also added 1 to the unigram
  precision, so compare-mt's numbers depend on the NLTK installed beside it.)
- **Buckets** (`Buckets`): a value falls into the first bucket whose cutoff it is below,
  or the last bucket (>= the last cutoff). Labels: "<c0", then "[c_i-1,c_i)", or the single
  number when integer cutoffs are one apart, then ">=c_last". Defaults:
  word frequency 1, 2, 3, 4, 5, 10, 100, 1000 (labels <1, 1, 2, 3, 4, [5,10), [10,100),
  [100,1000), >=1000); reference length in tokens 10, 20, ..., 60; hypothesis length minus
  reference length -20, -10, -5, -4, ..., 5, 6, 11, 21; sentence BLEU 10.0, 20.0, ..., 90.0
  (labels "<10.0", "[10.0,20.0)", ...).
- **Word accuracy by frequency bucket** (`FreqWordBucketer`): a word's frequency is its
  token count in the frequency corpus (compare-mt's `freq_corpus_file`, tokenized as
  above) or, without one, in the reference; words never seen count 0. Per segment, a
  hypothesis token matches if an equal reference token is left (so a word matches
  min(hyp count, ref count) times). Per bucket: matches m, hypothesis tokens o, reference
  tokens r; recall m / r, precision m / o, F = 2 * p * r / (p + r), and all three are 0
  when m = 0.
- **N-gram difference** (`compare_ngrams`, `extract_salient_features`): per system, how
  often each 1- to 4-gram of its output matches the reference (clipped per segment);
  n-grams that match at least once in either system are scored
  (m1 + alpha) / (m1 + m2 + 2 * alpha), alpha = 1, and the 50 highest and 50 lowest are
  reported. compare-mt orders tied scores by Python's string hashing, which changes from
  run to run; here ties go to the n-gram with more matches in the favoured system, then
  to the lexicographically smaller n-gram, so the lists equal compare-mt's up to the
  order of ties (and which of the n-grams tied at the cut-off make the list).

All reductions use the same float operations in the same order as compare-mt and NLTK,
so the figures are equal to theirs, bit for bit.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from typing import (
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

Tokens = Sequence[str]
Ngram = Tuple[str, ...]
Number = Union[int, float]

MAX_ORDER = 4
"""BLEU's largest n-gram order, compare-mt's default (weights 0.25 each)."""
SCALE = 100.0
"""compare-mt's default --scorer_scale, for BLEU and sentence BLEU."""
BLEU_STAT_NAMES: Tuple[str, ...] = (
    "ref_len", "hyp_len",
    *(f"match_{n}" for n in range(1, MAX_ORDER + 1)),
    *(f"count_{n}" for n in range(1, MAX_ORDER + 1)),
)
"""The columns of a `bleu_stats` row; count_n is at least 1 per segment (see above)."""
NGRAM_REPORT_LENGTH = 50
NGRAM_ALPHA = 1.0


# -- lines and tokens --------------------------------------------------------------------

def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 file as compare-mt reads them: Python's universal newlines, so a
    lone "\\r" ends a line too (unlike evalproto.readers.text, which splits on "\\n" only).
    The line break is removed; nothing else is."""
    with open(path, "r", encoding="utf-8") as stream:
        return [line[:-1] if line.endswith("\n") else line for line in stream]


def tokenize(line: str) -> List[str]:
    """compare-mt's tokens of a line: stripped of surrounding whitespace, split on " "."""
    return line.strip().split(" ")


# -- buckets -----------------------------------------------------------------------------

def bucket_labels(cutoffs: Sequence[Number], integer: bool = True) -> Tuple[str, ...]:
    """compare-mt's labels for buckets with these cutoffs (one more label than cutoffs).
    With `integer`, a bucket [c, c + 1) is labelled "c"."""
    labels = [f"<{cutoffs[0]}"]
    for previous, cutoff in zip(cutoffs, cutoffs[1:]):
        if integer and cutoff - 1 == previous:
            labels.append(f"{cutoff - 1}")
        else:
            labels.append(f"[{previous},{cutoff})")
    labels.append(f">={cutoffs[-1]}")
    return tuple(labels)


@dataclass(frozen=True)
class Buckets:
    """Buckets of a number by ascending cutoffs: bucket i holds the values below cutoffs[i]
    and not below cutoffs[i - 1]; the last bucket holds values >= cutoffs[-1]."""

    cutoffs: Tuple[Number, ...]
    labels: Tuple[str, ...]

    @classmethod
    def of(cls, cutoffs: Sequence[Number], integer: bool = True) -> "Buckets":
        """Buckets with compare-mt's labels (see `bucket_labels`)."""
        cutoffs = tuple(cutoffs)
        if not cutoffs:
            raise ValueError("buckets need at least one cutoff")
        if any(b < a for a, b in zip(cutoffs, cutoffs[1:])):
            raise ValueError(f"bucket cutoffs must be ascending, got {cutoffs}")
        return cls(cutoffs, bucket_labels(cutoffs, integer))

    def __len__(self) -> int:
        return len(self.labels)

    def index(self, value: Number) -> int:
        """The bucket of one value."""
        return bisect_right(self.cutoffs, value)

    def indices(self, values: Iterable[Number]) -> np.ndarray:
        """The bucket of each value, as an int array."""
        return np.array([self.index(value) for value in values], dtype=np.int64)


FREQUENCY_BUCKETS = Buckets.of((1, 2, 3, 4, 5, 10, 100, 1000))
LENGTH_BUCKETS = Buckets.of((10, 20, 30, 40, 50, 60))
LENGTH_DIFF_BUCKETS = Buckets.of((-20, -10, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 11, 21))
SENTENCE_BLEU_BUCKETS = Buckets.of(tuple(x * SCALE / 10.0 for x in range(1, 10)),
                                   integer=False)


def bucket_sums(rows: np.ndarray, bucket: np.ndarray, n_buckets: int,
                weights: Optional[np.ndarray] = None) -> np.ndarray:
    """(n_buckets, d): the rows of each bucket summed, each row times its weight (1 by
    default; a bootstrap resample's weights are how often it draws each segment)."""
    rows = np.asarray(rows, dtype=np.float64)
    if weights is not None:
        rows = rows * np.asarray(weights, dtype=np.float64)[:, None]
    sums = np.zeros((n_buckets, rows.shape[1]))
    np.add.at(sums, np.asarray(bucket, dtype=np.int64), rows)
    return sums


# -- BLEU, compare-mt's and NLTK's sentence BLEU -----------------------------------------

def _ngrams(tokens: Tokens, n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu_stats(ref: Tokens, hyp: Tokens) -> np.ndarray:
    """One segment's row of compare-mt BLEU statistics (`BLEU_STAT_NAMES`): reference and
    hypothesis lengths, clipped n-gram matches, and hypothesis n-gram counts at least 1."""
    row = np.zeros(len(BLEU_STAT_NAMES))
    row[0], row[1] = len(ref), len(hyp)
    for n in range(1, MAX_ORDER + 1):
        ref_counts = _ngrams(ref, n)
        row[1 + n] = sum(min(count, ref_counts.get(ngram, 0))
                         for ngram, count in _ngrams(hyp, n).items())
        row[1 + MAX_ORDER + n] = max(1, len(hyp) - n + 1)
    return row


def bleu_rows(refs: Sequence[Tokens], hyps: Sequence[Tokens]) -> np.ndarray:
    """(n, 10): `bleu_stats` of each segment."""
    _check_lengths(len(refs), {"hypotheses": len(hyps)})
    rows = np.zeros((len(refs), len(BLEU_STAT_NAMES)))
    for i, (ref, hyp) in enumerate(zip(refs, hyps)):
        rows[i] = bleu_stats(ref, hyp)
    return rows


def bleu_score(summed: Sequence[float]) -> float:
    """compare-mt's corpus BLEU (0-100) of summed `bleu_stats` rows; 0 for no segments."""
    ref_len, hyp_len, *rest = (float(x) for x in summed)
    matches, counts = rest[:MAX_ORDER], rest[MAX_ORDER:]
    if matches[0] == 0:
        return 0.0
    log_precision = 0.0
    for match, count in zip(matches, counts):
        precision = match / count if count != 0 else 0.0
        log_precision += (math.log(precision) if precision > 0 else 0.0) * (1 / MAX_ORDER)
    brevity = min(1.0, math.exp(1 - ref_len / hyp_len)) if hyp_len != 0 else 0.0
    return SCALE * brevity * math.exp(log_precision)


def length_ratio(summed: Sequence[float]) -> float:
    """compare-mt's length ratio of summed `bleu_stats` rows: hypothesis tokens over
    reference tokens, 0 without reference tokens."""
    ref_len, hyp_len = float(summed[0]), float(summed[1])
    return hyp_len / ref_len if ref_len != 0 else 0.0


def sentence_bleu(row: Sequence[float]) -> float:
    """compare-mt's sentence BLEU (NLTK, smoothing method 2; 0-100) of one segment's
    `bleu_stats` row."""
    ref_len, hyp_len, *rest = (float(x) for x in row)
    matches, counts = rest[:MAX_ORDER], rest[MAX_ORDER:]
    if matches[0] == 0:
        return 0.0
    precisions = [matches[0] / counts[0]]
    precisions += [(m + 1) / (c + 1) for m, c in zip(matches[1:], counts[1:])]
    log_mean = math.fsum((1 / MAX_ORDER) * math.log(p) for p in precisions if p > 0)
    if hyp_len > ref_len:
        brevity = 1.0
    elif hyp_len == 0:
        brevity = 0.0
    else:
        brevity = math.exp(1 - ref_len / hyp_len)
    return SCALE * (brevity * math.exp(log_mean))


def sentence_bleu_scores(rows: np.ndarray) -> np.ndarray:
    """(n,): `sentence_bleu` of each row."""
    return np.array([sentence_bleu(row) for row in rows], dtype=np.float64)


# -- word accuracy by frequency bucket ---------------------------------------------------

@dataclass(frozen=True)
class WordAccuracy:
    """One system's word accuracy per bucket, compare-mt's (mcnt, rcnt, ocnt, rec, prec,
    fmeas) as arrays over the buckets."""

    labels: Tuple[str, ...]
    matches: np.ndarray
    ref_words: np.ndarray
    hyp_words: np.ndarray
    recall: np.ndarray
    precision: np.ndarray
    fmeasure: np.ndarray


class FrequencyBuckets:
    """compare-mt's frequency bucketing of words, and the per-segment rows of word matches.

    A row (`stats`) has 3 × len(buckets) columns: matched hypothesis tokens per bucket,
    hypothesis tokens per bucket, reference tokens per bucket. Summed rows give every
    figure of the word accuracy table (`accuracy`)."""

    def __init__(self, counts: Mapping[str, int], buckets: Buckets = FREQUENCY_BUCKETS) -> None:
        self.counts = dict(counts)
        self.buckets = buckets

    @classmethod
    def from_corpus(cls, corpus: Iterable[Tokens],
                    buckets: Buckets = FREQUENCY_BUCKETS) -> "FrequencyBuckets":
        """Frequencies counted from tokenized lines: the reference, or a `--freq-corpus`
        (compare-mt's freq_corpus_file)."""
        counts: Counter = Counter()
        for tokens in corpus:
            counts.update(tokens)
        return cls(counts, buckets)

    @property
    def labels(self) -> Tuple[str, ...]:
        return self.buckets.labels

    def bucket(self, word: str) -> int:
        """The bucket of a word by its frequency (0 for an unseen word)."""
        return self.buckets.index(self.counts.get(word, 0))

    def stats(self, ref: Tokens, hyp: Tokens) -> np.ndarray:
        """One segment's row: matches, hypothesis tokens, reference tokens per bucket."""
        size = len(self.buckets)
        row = np.zeros(3 * size)
        ref_counts = Counter(ref)
        for word, count in Counter(hyp).items():
            bucket = self.bucket(word)
            row[bucket] += min(count, ref_counts.get(word, 0))
            row[size + bucket] += count
        for word, count in ref_counts.items():
            row[2 * size + self.bucket(word)] += count
        return row

    def rows(self, refs: Sequence[Tokens], hyps: Sequence[Tokens]) -> np.ndarray:
        """(n, 3 × buckets): `stats` of each segment."""
        _check_lengths(len(refs), {"hypotheses": len(hyps)})
        rows = np.zeros((len(refs), 3 * len(self.buckets)))
        for i, (ref, hyp) in enumerate(zip(refs, hyps)):
            rows[i] = self.stats(ref, hyp)
        return rows

    def accuracy(self, summed: Sequence[float]) -> WordAccuracy:
        """compare-mt's word accuracy per bucket from summed rows."""
        size = len(self.buckets)
        values = np.asarray(summed, dtype=np.float64)
        matches, hyp_words, ref_words = (values[i * size:(i + 1) * size] for i in range(3))
        recall, precision, fmeasure = np.zeros(size), np.zeros(size), np.zeros(size)
        for b in range(size):
            if matches[b] != 0:
                recall[b] = float(matches[b]) / float(ref_words[b])
                precision[b] = float(matches[b]) / float(hyp_words[b])
                fmeasure[b] = 2 * precision[b] * recall[b] / (precision[b] + recall[b])
        return WordAccuracy(self.labels, matches.astype(np.int64), ref_words.astype(np.int64),
                            hyp_words.astype(np.int64), recall, precision, fmeasure)


# -- n-gram difference -------------------------------------------------------------------

def ngram_matches(refs: Sequence[Tokens], hyps: Sequence[Tokens], min_n: int = 1,
                  max_n: int = MAX_ORDER) -> Dict[Ngram, int]:
    """How often each n-gram (min_n..max_n) of the hypotheses matches its segment's
    reference, clipped per segment; n-grams that never match are absent."""
    _check_lengths(len(refs), {"hypotheses": len(hyps)})
    found: Counter = Counter()
    for ref, hyp in zip(refs, hyps):
        for n in range(min_n, max_n + 1):
            ref_counts = _ngrams(ref, n)
            for ngram, count in _ngrams(hyp, n).items():
                matched = min(count, ref_counts.get(ngram, 0))
                if matched:
                    found[ngram] += matched
    return dict(found)


class NgramEntry(NamedTuple):
    ngram: Ngram
    score: float
    first: int
    """Matches of the n-gram in the first system's output."""
    second: int
    """... and in the second's."""


@dataclass(frozen=True)
class NgramDifference:
    """compare-mt's n-gram difference analysis ("match") of two systems."""

    systems: Tuple[str, str]
    alpha: float
    matches: Tuple[Dict[Ngram, int], Dict[Ngram, int]]
    scores: Dict[Ngram, float]
    """(m1 + alpha) / (m1 + m2 + 2 alpha) for every n-gram matched by either system."""
    first_better: List[NgramEntry]
    """The highest scores first: n-grams the first system matches more often."""
    second_better: List[NgramEntry]
    """The lowest scores first: n-grams the second system matches more often."""


def ngram_difference(refs: Sequence[Tokens], first: Sequence[Tokens], second: Sequence[Tokens],
                     systems: Tuple[str, str] = ("sys1", "sys2"), min_n: int = 1,
                     max_n: int = MAX_ORDER, alpha: float = NGRAM_ALPHA,
                     report_length: int = NGRAM_REPORT_LENGTH) -> NgramDifference:
    """compare-mt's default n-gram difference analysis of two systems (see the module
    docstring for its definition and the order of ties)."""
    m1 = ngram_matches(refs, first, min_n, max_n)
    m2 = ngram_matches(refs, second, min_n, max_n)
    entries = []
    scores = {}
    for ngram in m1.keys() | m2.keys():
        a, b = m1.get(ngram, 0), m2.get(ngram, 0)
        scores[ngram] = (a + alpha) / (a + b + 2 * alpha)
        entries.append(NgramEntry(ngram, scores[ngram], a, b))
    first_better = sorted(entries, key=lambda e: (-e.score, -e.first, e.ngram))
    second_better = sorted(entries, key=lambda e: (e.score, -e.second, e.ngram))
    return NgramDifference((systems[0], systems[1]), alpha, (m1, m2), scores,
                           first_better[:report_length], second_better[:report_length])


# -- the whole default report ------------------------------------------------------------

@dataclass(frozen=True)
class BucketTable:
    """One of compare-mt's sentence bucket tables: a value per bucket for each system.

    `rows[s]` are system s's per-segment rows and `bucket[s]` each segment's bucket;
    `values_for` reduces the (weighted) rows of each bucket to the table's values."""

    title: str
    labels: Tuple[str, ...]
    statistic: str
    """"bleu" (compare-mt BLEU of the bucket's segments) or "count" (how many segments)."""
    values: Dict[str, Tuple[float, ...]]
    segments: Dict[str, Tuple[int, ...]]
    """How many segments fall into each bucket, per system."""
    rows: Dict[str, np.ndarray]
    bucket: Dict[str, np.ndarray]

    def values_for(self, system: str, weights: Optional[np.ndarray] = None) -> Tuple[Number, ...]:
        """The system's values per bucket with each segment counted `weights[i]` times."""
        return _bucket_values(self.statistic, self.rows[system], self.bucket[system],
                              len(self.labels), weights)


def _bucket_values(statistic: str, rows: np.ndarray, bucket: np.ndarray, n_buckets: int,
                   weights: Optional[np.ndarray] = None) -> Tuple[Number, ...]:
    sums = bucket_sums(rows, bucket, n_buckets, weights)
    if statistic == "bleu":
        return tuple(bleu_score(row) for row in sums)
    return tuple(int(row[0]) for row in sums)


@dataclass(frozen=True)
class WordAccuracyTable:
    """compare-mt's word accuracy by frequency bucket, per system, with the rows."""

    labels: Tuple[str, ...]
    systems: Dict[str, WordAccuracy]
    rows: Dict[str, np.ndarray]
    buckets: FrequencyBuckets

    def accuracy_for(self, system: str, weights: Optional[np.ndarray] = None) -> WordAccuracy:
        """The system's word accuracy with each segment counted `weights[i]` times. The
        buckets stay those of the whole reference (or frequency corpus)."""
        rows = self.rows[system]
        if weights is not None:
            rows = rows * np.asarray(weights, dtype=np.float64)[:, None]
        return self.buckets.accuracy(rows.sum(axis=0))


@dataclass(frozen=True)
class ComparisonReport:
    """The figures of a default `compare-mt ref sys1 sys2 ...` run."""

    systems: Tuple[str, ...]
    bleu: Dict[str, float]
    length_ratio: Dict[str, float]
    bleu_rows: Dict[str, np.ndarray]
    """(n, 10) `bleu_stats` rows per system; the corpus figures are reductions of their sum."""
    word_accuracy: WordAccuracyTable
    bleu_by_length: BucketTable
    length_diff: BucketTable
    sentence_bleu: BucketTable
    ngrams: Optional[NgramDifference]
    """First vs second system; None with fewer than two systems (compare-mt omits it)."""


Systems = Union[Mapping[str, Sequence[str]], Sequence[Sequence[str]]]
"""System outputs as lines: by name, or a list named sys1, sys2, ... as compare-mt does."""


def compare_mt_figures(refs: Sequence[str], systems: Systems,
            freq_corpus: Optional[Iterable[str]] = None) -> ComparisonReport:
    """compare-mt's default analyses of one reference and N systems' outputs, as lines.

    `systems` maps names to outputs, or is a list of outputs named sys1, sys2, ... as
    compare-mt names them. `freq_corpus` (lines) is what compare-mt's
    `--compare_word_accuracies bucket_type=freq,freq_corpus_file=FILE` counts word
    frequencies from; by default they are counted from the reference. Every output must
    have as many lines as the reference."""
    if not isinstance(systems, Mapping):
        systems = {f"sys{i + 1}": outputs for i, outputs in enumerate(systems)}
    if not systems:
        raise ValueError("compare-mt's figures need at least one system")
    _check_lengths(len(refs), {name: len(outputs) for name, outputs in systems.items()})
    ref_tokens = [tokenize(line) for line in refs]
    hyp_tokens = {name: [tokenize(line) for line in outputs] for name, outputs in systems.items()}
    names = tuple(hyp_tokens)

    frequency = FrequencyBuckets.from_corpus(
        ref_tokens if freq_corpus is None else (tokenize(line) for line in freq_corpus))
    word_rows = {name: frequency.rows(ref_tokens, hyps) for name, hyps in hyp_tokens.items()}
    words = WordAccuracyTable(frequency.labels,
                              {name: frequency.accuracy(rows.sum(axis=0))
                               for name, rows in word_rows.items()},
                              word_rows, frequency)

    bleu_table = {name: bleu_rows(ref_tokens, hyps) for name, hyps in hyp_tokens.items()}
    length_bucket = LENGTH_BUCKETS.indices([len(ref) for ref in ref_tokens])
    length_diff_bucket = {
        name: LENGTH_DIFF_BUCKETS.indices([len(h) - len(r) for r, h in zip(ref_tokens, hyps)])
        for name, hyps in hyp_tokens.items()}
    sentence_bucket = {name: SENTENCE_BLEU_BUCKETS.indices(sentence_bleu_scores(rows))
                       for name, rows in bleu_table.items()}
    ones = np.ones((len(refs), 1))

    def table(title: str, buckets: Buckets, statistic: str, rows: Dict[str, np.ndarray],
              bucket: Dict[str, np.ndarray]) -> BucketTable:
        size = len(buckets)
        return BucketTable(
            title, buckets.labels, statistic,
            values={name: _bucket_values(statistic, rows[name], bucket[name], size)
                    for name in names},
            segments={name: tuple(int(c) for c in np.bincount(bucket[name], minlength=size))
                      for name in names},
            rows=rows, bucket=bucket)

    return ComparisonReport(
        systems=names,
        bleu={name: bleu_score(rows.sum(axis=0)) for name, rows in bleu_table.items()},
        length_ratio={name: length_ratio(rows.sum(axis=0)) for name, rows in bleu_table.items()},
        bleu_rows=bleu_table,
        word_accuracy=words,
        bleu_by_length=table("BLEU by reference length", LENGTH_BUCKETS, "bleu", bleu_table,
                             {name: length_bucket for name in names}),
        length_diff=table("segments by hypothesis length - reference length",
                          LENGTH_DIFF_BUCKETS, "count", {name: ones for name in names},
                          length_diff_bucket),
        sentence_bleu=table("segments by sentence BLEU", SENTENCE_BLEU_BUCKETS, "count",
                            {name: ones for name in names}, sentence_bucket),
        ngrams=(ngram_difference(ref_tokens, hyp_tokens[names[0]], hyp_tokens[names[1]],
                                 systems=(names[0], names[1]))
                if len(names) > 1 else None),
    )


def _check_lengths(expected: int, lengths: Mapping[str, int]) -> None:
    for name, length in lengths.items():
        if length != expected:
            raise ValueError(f"{name} has {length} segments, the reference {expected}")
