"""evalproto.stats.comparemt against compare-mt 0.2.10 itself.

compare-mt's default run (`compare-mt ref sys1 sys2 ...`) is run in this process with its
own `main()`, and the report objects it builds are captured just before it prints them,
so every figure is compared at full precision (its printout has 4 decimals). Every figure
is compared for exact equality: evalproto.stats.comparemt does compare-mt's and NLTK's float
operations in the same order, so no tolerance is needed. The one exception is the order
of tied n-gram scores, which compare-mt takes from Python's string hashing (a different
order in every process, see test_compare_mt_orders_tied_ngrams_by_string_hashing), so the
n-gram lists are compared up to the order of ties. The only tolerance (1e-9) is in the
comparisons with sacrebleu, whose BLEU sums its logarithms in another order.
"""

import contextlib
import io
import os
import random
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
import pytest
from compare_mt import bucketers, compare_mt_main, corpus_utils, reporters, scorers
from conftest import DATA
from sacrebleu.metrics import BLEU as SacreBLEU

from evalproto.stats import comparemt as cm

NBSP = "\xa0"

CORPORA = {
    "de-en": ("de-en.ref.A.en", ["de-en.hyp.LT22.en", "de-en.hyp.Lan-Bridge.en"]),
    "en-de": ("en-de.ref.A.de", ["en-de.hyp.Online-A.de", "en-de.hyp.JDExploreAcademy.de"]),
    # the second reference stands in for a second system
    "multilingual": ("multilingual.ref.A", ["multilingual.hyp", "multilingual.ref.B"]),
}

LONG = " ".join(f"w{i % 23}" for i in range(64))  # 64 tokens: the >=60 length bucket
# (reference, system 1, system 2, system 3), one segment per tuple
TRICKY = [
    (f"Der Preis beträgt 10{NBSP}000 Euro .", "Der Preis beträgt 10 000 Euro .",
     f"Der Preis beträgt 10{NBSP}000 Euro .", f"Preis 10{NBSP}000"),
    ("a\tb c d e", "a b c d e", "a\tb c d e", "a\tb\tc d e"),
    (f"{NBSP} Hello world !\t", "Hello world !", f"\tHello world !{NBSP}", "Hello  world !"),
    ("", "", "Something", "   "),
    ("the  cat sat", "the cat sat", "the  cat  sat", " the  cat sat "),
    ("What ?!?! ... !!!", "What ? ! ? ! ... ! ! !", "What ?!?! ... !!!", "?!?! ?!?! ?!?!"),
    ("the cat is on the mat", "the the the the the the the", "the cat the cat", "mat"),
    (LONG, LONG, LONG + " extra", " ".join(LONG.split()[:30])),
    ("short one", "short one " + " ".join(["x"] * 25), "short", "one short"),
    (" ".join(["y"] * 30), "y", " ".join(["y"] * 60), "z"),
    ("Identical sentence with several words in it .",) * 4,
    ("Nothing matches here at all", "Völlig andere Wörter hier", "NOTHING MATCHES", "nothing"),
    ("我喜欢猫", "我喜欢猫", "我 喜欢 猫", "我喜欢狗"),
    ("line\u2028with a line separator\u2028", "line\u2028with a line separator",
     "line with a line separator", "line\x85with a next line"),
    # a lone "\r" ends a line for compare-mt (at a line's end it would make "\r\n")
    ("first half\rsecond half", "first half\rsecond", "first\rsecond half", "\rsecond"),
    ("Ünïcödé café naïve", "Unicode cafe naive", "Ünïcödé café naïve", "ÜNÏCÖDÉ"),
    ("1 , 2 , 3 , 4 , 5", "1 , 2 , 3", "1 2 3 4 5", ", , , ,"),
]


# -- running compare-mt ------------------------------------------------------------------

def compare_mt_reports(ref: str, outs: Sequence[str], *options: str) -> List[object]:
    """The report objects of `compare-mt ref outs... options`, run in this process."""
    captured = []
    original = reporters.Report.generate_report
    argv = sys.argv
    reporters.Report.generate_report = lambda self, *args, **kwargs: captured.append(self)
    sys.argv = ["compare-mt", ref, *outs, *options]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            compare_mt_main.main()
    finally:
        sys.argv = argv
        reporters.Report.generate_report = original
    return captured


def by_kind(reports: List[object]) -> Dict[str, object]:
    """The reports of a default run, by what they show."""
    kinds = {}
    for report in reports:
        if isinstance(report, reporters.ScoreReport):
            kinds[report.scorer.idstr()] = report
        elif isinstance(report, reporters.WordReport):
            kinds["words"] = report
        elif isinstance(report, reporters.SentenceReport):
            kinds[f"sentence-{report.bucketer.idstr()}"] = report
        elif isinstance(report, reporters.NgramReport):
            kinds["ngrams"] = report
    return kinds


def write_corpus(directory: Path, columns: Sequence[Sequence[str]]) -> List[str]:
    """One file per column, lines joined by "\\n" and written byte for byte."""
    paths = []
    for i, lines in enumerate(columns):
        path = directory / f"column{i}.txt"
        with open(path, "w", encoding="utf-8", newline="") as stream:
            stream.write("".join(line + "\n" for line in lines))
        paths.append(str(path))
    return paths


def random_corpus(seed: int, segments: int = 80, systems: int = 2) -> List[List[str]]:
    """A reference and `systems` outputs from a small vocabulary, so that words, n-grams
    and ties repeat a lot; with NBSPs and tabs in tokens, empty tokens and lines, and
    lengths from 0 to 75 tokens."""
    rng = random.Random(seed)
    vocabulary = ["the", "cat", "a", "mat", ".", ",", "!!", "The", "Katze", f"10{NBSP}000",
                  "x\ty", "", "über", "猫", "on", "sat"]
    columns = [[] for _ in range(systems + 1)]
    for _ in range(segments):
        length = rng.choice([0, 1, 2, 3, rng.randrange(4, 20), rng.randrange(20, 76)])
        ref = [rng.choice(vocabulary) for _ in range(length)]
        columns[0].append(" ".join(ref))
        for s in range(1, systems + 1):
            hyp = []
            for word in ref:
                roll = rng.random()
                if roll < 0.6:
                    hyp.append(word)
                elif roll < 0.75:
                    hyp.append(rng.choice(vocabulary))
                elif roll < 0.9:
                    hyp.extend([word, rng.choice(vocabulary)])
            if rng.random() < 0.1:
                hyp.extend(rng.choice(vocabulary) for _ in range(rng.randrange(0, 30)))
            columns[s].append(" ".join(hyp))
    return columns


# -- comparing ---------------------------------------------------------------------------

def assert_same_up_to_ties(ours: List[cm.NgramEntry], theirs: List[tuple],
                           scores: Dict[tuple, float]) -> None:
    """Equal lists of (n-gram, score) but for the order of equal scores, and for which of
    the n-grams tied at the end of the list made it in."""
    assert [entry.score for entry in ours] == [score for _, score in theirs]
    if not theirs:
        return
    last = theirs[-1][1]
    ours_by_score, theirs_by_score = defaultdict(set), defaultdict(set)
    for entry in ours:
        ours_by_score[entry.score].add(entry.ngram)
    for ngram, score in theirs:
        theirs_by_score[score].add(ngram)
    for score in theirs_by_score:
        if score != last:
            assert ours_by_score[score] == theirs_by_score[score], score
    tied = {ngram for ngram, score in scores.items() if score == last}
    assert ours_by_score[last] <= tied and theirs_by_score[last] <= tied


def assert_matches_compare_mt(ref_path: str, out_paths: Sequence[str],
                              freq_corpus: str = None) -> cm.ComparisonReport:
    """Every figure of our analysis equals compare-mt's default run on the same files."""
    options = []
    if freq_corpus is not None:
        options = ["--compare_word_accuracies", f"bucket_type=freq,freq_corpus_file={freq_corpus}"]
    theirs = by_kind(compare_mt_reports(ref_path, out_paths, *options))
    ours = cm.compare_mt_figures(
        cm.read_lines(ref_path), [cm.read_lines(path) for path in out_paths],
        freq_corpus=None if freq_corpus is None else cm.read_lines(freq_corpus))
    names = ours.systems
    assert names == tuple(f"sys{i + 1}" for i in range(len(out_paths)))

    ref = corpus_utils.load_tokens(ref_path)
    outs = [corpus_utils.load_tokens(path) for path in out_paths]
    assert [cm.tokenize(line) for line in cm.read_lines(ref_path)] == ref
    for path, out in zip(out_paths, outs):
        assert [cm.tokenize(line) for line in cm.read_lines(path)] == out

    # aggregate scores
    assert list(ours.bleu.values()) == list(theirs["bleu"].scores)
    assert list(ours.length_ratio.values()) == list(theirs["lengthrat"].scores)
    bleu_scorer, sentence_scorer = scorers.BleuScorer(), scorers.SentBleuScorer()
    for name, out in zip(names, outs):
        for row, (ref_len, out_len, precisions) in zip(ours.bleu_rows[name],
                                                         bleu_scorer.cache_stats(ref, out)):
            assert list(row) == [ref_len, out_len, *(n for n, _ in precisions),
                                 *(d for _, d in precisions)]
        assert [cm.sentence_bleu(row) for row in ours.bleu_rows[name]] == [
            sentence_scorer.score_sentence(r, o)[0] for r, o in zip(ref, out)]

    # word accuracy by frequency bucket: the table, and every segment's counts
    words = theirs["words"]
    assert ours.word_accuracy.labels == tuple(words.bucketer.bucket_strs)
    for name, statistics in zip(names, words.statistics):
        accuracy = ours.word_accuracy.systems[name]
        assert list(zip(accuracy.matches, accuracy.ref_words, accuracy.hyp_words,
                        accuracy.recall, accuracy.precision, accuracy.fmeasure)) == statistics
    _, ref_totals, out_totals, out_matches = words.bucketer.calc_statistics(ref, outs)
    size = len(words.bucketer.bucket_strs)
    for i, name in enumerate(names):
        rows = ours.word_accuracy.rows[name]
        assert rows[:, :size].tolist() == [m[i].tolist() for m in out_matches]
        assert rows[:, size:2 * size].tolist() == [t[i].tolist() for t in out_totals]
        assert rows[:, 2 * size:].tolist() == [t.tolist() for t in ref_totals]

    # sentence buckets: labels, values, and how many segments each bucket holds
    for kind, table in [("sentence-length", ours.bleu_by_length),
                        ("sentence-lengthdiff", ours.length_diff),
                        ("sentence-sentbleu", ours.sentence_bleu)]:
        report = theirs[kind]
        assert table.labels == tuple(report.bucketer.bucket_strs), kind
        assert [list(table.values[name]) for name in names] == report.sys_stats, kind
        for name, out in zip(names, outs):
            corpus = report.bucketer.create_bucketed_corpus(out, ref=ref)
            assert list(table.segments[name]) == [len(bucket[0]) for bucket in corpus], kind

    # n-gram differences of the first two systems
    ngrams = theirs["ngrams"]
    (scorelist,) = ngrams.scorelist
    assert ours.ngrams.scores == dict(scorelist)
    for mine, matches in zip(ours.ngrams.matches, ngrams.matches):
        assert mine == {ngram: count for ngram, count in matches.items() if count}
    length = ngrams.report_length
    assert_same_up_to_ties(ours.ngrams.first_better, scorelist[:length], ours.ngrams.scores)
    assert_same_up_to_ties(ours.ngrams.second_better, scorelist[::-1][:length],
                           ours.ngrams.scores)
    for entry in ours.ngrams.first_better + ours.ngrams.second_better:
        assert (entry.first, entry.second) == (ngrams.matches[0][entry.ngram],
                                               ngrams.matches[1][entry.ngram])
    return ours


# -- parity ------------------------------------------------------------------------------

@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_real_text_equals_compare_mt(corpus):
    ref, outs = CORPORA[corpus]
    assert_matches_compare_mt(str(DATA / ref), [str(DATA / out) for out in outs])


@pytest.mark.parametrize("corpus, freq_corpus", [
    ("de-en", "de-en.ref.B.en"),
    ("en-de", "en-de.ref.B.de"),  # has non-breaking spaces
    ("multilingual", "de-en.hyp.Lan-Bridge.en"),  # few words in common: mostly "<1"
])
def test_frequency_corpus_equals_compare_mt(corpus, freq_corpus):
    ref, outs = CORPORA[corpus]
    ours = assert_matches_compare_mt(str(DATA / ref), [str(DATA / out) for out in outs],
                                     freq_corpus=str(DATA / freq_corpus))
    # the frequency corpus, not the reference, decides the buckets
    default = cm.compare_mt_figures(cm.read_lines(str(DATA / ref)),
                         [cm.read_lines(str(DATA / out)) for out in outs])
    assert not np.array_equal(ours.word_accuracy.rows["sys1"], default.word_accuracy.rows["sys1"])


def test_tricky_text_equals_compare_mt(tmp_path):
    columns = [[segment[i] for segment in TRICKY] for i in range(4)]
    paths = write_corpus(tmp_path, columns)
    ours = assert_matches_compare_mt(paths[0], paths[1:])
    # the text reaches what it was written for
    assert len(cm.read_lines(paths[0])) == len(TRICKY) + 1  # the lone "\r" ends a line
    for table in (ours.bleu_by_length, ours.length_diff, ours.sentence_bleu):
        segments = np.sum([table.segments[name] for name in ours.systems], axis=0)
        assert segments[0] > 0 and segments[-1] > 0, table.title


def test_tricky_text_with_frequency_corpus_equals_compare_mt(tmp_path):
    columns = [[segment[i] for segment in TRICKY] for i in range(4)]
    paths = write_corpus(tmp_path, columns + [[LONG] * 3 + [s[2] for s in TRICKY]])
    assert_matches_compare_mt(paths[0], paths[1:4], freq_corpus=paths[4])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_text_equals_compare_mt(tmp_path, seed):
    paths = write_corpus(tmp_path, random_corpus(seed, systems=3))
    assert_matches_compare_mt(paths[0], paths[1:])


def test_one_system_has_no_ngram_analysis(tmp_path):
    ref, (out, _) = CORPORA["multilingual"]
    theirs = by_kind(compare_mt_reports(str(DATA / ref), [str(DATA / out)]))
    ours = cm.compare_mt_figures(cm.read_lines(str(DATA / ref)),
                                 {"mine": cm.read_lines(str(DATA / out))})
    assert "ngrams" not in theirs and ours.ngrams is None
    assert [ours.bleu["mine"]] == list(theirs["bleu"].scores)


@pytest.mark.slow
def test_compare_mt_command_prints_our_figures():
    """The printed tables of the compare-mt command itself (not only its functions) show
    our figures, rounded to its 4 decimals."""
    ref, outs = CORPORA["en-de"]
    paths = [str(DATA / ref)] + [str(DATA / out) for out in outs]
    printed = subprocess.run([sys.executable, "-m", "compare_mt.compare_mt_main", *paths],
                             capture_output=True, text=True, check=True).stdout
    ours = cm.compare_mt_figures(cm.read_lines(paths[0]),
                                 [cm.read_lines(path) for path in paths[1:]])

    def table(after: str) -> Dict[str, List[float]]:
        lines = printed[printed.index(after):].split("\n\n")[0].splitlines()
        rows = [line.split("\t") for line in lines if "\t" in line][1:]
        return {row[0]: [float(re.sub(r" \(.*", "", x) or 0) for x in row[1:]] for row in rows}

    def rounded(values) -> List[float]:
        return [float(f"{value:.4f}") for value in values]

    assert table("BLEU:\n") == {"BLEU": rounded(ours.bleu.values())}
    assert table("length ratio:\n") == {"length ratio": rounded(ours.length_ratio.values())}
    accuracy = [ours.word_accuracy.systems[name].fmeasure for name in ours.systems]
    assert table("--- word fmeas") == {
        label: rounded(column) for label, *column in zip(ours.word_accuracy.labels, *accuracy)}
    for title, figures in [("statistic type: BLEU", ours.bleu_by_length),
                           ("statistic type: count\nlengthdiff", ours.length_diff),
                           ("statistic type: count\nsentbleu", ours.sentence_bleu)]:
        values = [figures.values[name] for name in ours.systems]
        assert table(title) == {label: rounded(column)
                                for label, *column in zip(figures.labels, *values)}


@pytest.mark.slow
def test_compare_mt_orders_tied_ngrams_by_string_hashing():
    """Why the n-gram lists are compared up to ties: compare-mt's own lists differ from
    one process to the next. If this fails, compare-mt became deterministic and the lists
    should be compared as they are."""
    ref, outs = CORPORA["de-en"]
    paths = [str(DATA / ref)] + [str(DATA / out) for out in outs]
    printouts = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        printed = subprocess.run([sys.executable, "-m", "compare_mt.compare_mt_main", *paths,
                                  "--compare_scores", "--compare_word_accuracies",
                                  "--compare_sentence_buckets", "--compare_sentence_examples"],
                                 capture_output=True, text=True, check=True, env=env).stdout
        printouts.append(printed[printed.index("N-gram Difference Analysis"):])
    assert printouts[0] != printouts[1]
    assert sorted(printouts[0].splitlines()) != sorted(printouts[1].splitlines())


# -- additivity: the rows serve resampling -----------------------------------------------

def test_weighted_rows_equal_compare_mt_on_the_resampled_corpus(tmp_path):
    """Counting segment i weights[i] times equals compare-mt on a corpus where it occurs
    weights[i] times (a bootstrap resample), with the buckets of the original reference."""
    ref, outs = CORPORA["de-en"]
    ref_path, out_paths = str(DATA / ref), [str(DATA / out) for out in outs]
    lines = [cm.read_lines(path) for path in [ref_path] + out_paths]
    ours = cm.compare_mt_figures(lines[0], lines[1:])
    picks = np.random.default_rng(7).choice(len(lines[0]), len(lines[0]))
    weights = np.bincount(picks, minlength=len(lines[0]))
    paths = write_corpus(tmp_path, [[column[i] for i in picks] for column in lines])
    theirs = by_kind(compare_mt_reports(paths[0], paths[1:], "--compare_word_accuracies",
                                        f"bucket_type=freq,freq_corpus_file={ref_path}"))

    assert [cm.bleu_score(weights @ ours.bleu_rows[name]) for name in ours.systems] == list(
        theirs["bleu"].scores)
    for name, statistics in zip(ours.systems, theirs["words"].statistics):
        accuracy = ours.word_accuracy.accuracy_for(name, weights)
        assert list(zip(accuracy.matches, accuracy.ref_words, accuracy.hyp_words,
                        accuracy.recall, accuracy.precision, accuracy.fmeasure)) == statistics
    for kind, table in [("sentence-length", ours.bleu_by_length),
                        ("sentence-lengthdiff", ours.length_diff),
                        ("sentence-sentbleu", ours.sentence_bleu)]:
        assert [list(table.values_for(name, weights)) for name in ours.systems] == theirs[
            kind].sys_stats, kind


# -- compare-mt's BLEU is not sacrebleu's ------------------------------------------------

def sacrebleu_none(refs: Sequence[str], hyps: Sequence[str]) -> float:
    return SacreBLEU(tokenize="none").corpus_score(list(hyps), [list(refs)]).score


def compare_mt_bleu(refs: Sequence[str], hyps: Sequence[str]) -> float:
    return scorers.BleuScorer().score_corpus([cm.tokenize(line) for line in refs],
                                             [cm.tokenize(line) for line in hyps])[0]


def our_bleu(refs: Sequence[str], hyps: Sequence[str]) -> float:
    rows = cm.bleu_rows([cm.tokenize(line) for line in refs], [cm.tokenize(line) for line in hyps])
    return cm.bleu_score(rows.sum(axis=0))


def test_bleu_keeps_a_non_breaking_space_inside_its_token():
    """sacrebleu's `-tok none` splits on any whitespace, so "10 000" and "10\\u00a0000" are
    the same two tokens to it; to compare-mt the second is one token, which matches
    nothing in "10 000". Without the NBSP, both agree."""
    refs = [f"The bill came to 10{NBSP}000 euros for the whole team last year .",
            "Prices rose by 5 per cent in the first quarter of the year ."]
    hyps = ["The bill came to 10 000 euros for the whole team last year .",
            "Prices rose by 5 percent in the first quarter of this year ."]
    ours = our_bleu(refs, hyps)
    assert ours == compare_mt_bleu(refs, hyps)
    assert abs(ours - sacrebleu_none(refs, hyps)) > 5
    plain = [ref.replace(NBSP, " ") for ref in refs]
    assert our_bleu(plain, hyps) == pytest.approx(sacrebleu_none(plain, hyps), abs=1e-9)


def test_bleu_counts_at_least_one_ngram_per_order_and_segment():
    """A segment shorter than n tokens adds 1 to compare-mt's order-n count, 0 to
    sacrebleu's."""
    refs = ["It rained all day long in the north of the country .", "Yes", "Thank you"]
    hyps = ["It rained all day in the north of the country .", "Yes", "Thank you"]
    ours = our_bleu(refs, hyps)
    assert ours == compare_mt_bleu(refs, hyps)
    assert abs(ours - sacrebleu_none(refs, hyps)) > 5
    assert our_bleu(refs[:1], hyps[:1]) == pytest.approx(sacrebleu_none(refs[:1], hyps[:1]),
                                                         abs=1e-9)


def test_bleu_drops_an_order_without_matches_instead_of_scoring_zero():
    """No 4-gram matches: sacrebleu (no smoothing) says 0, compare-mt leaves the order out."""
    refs, hyps = ["a b c d e f"], ["a b c x d e f"]
    ours = our_bleu(refs, hyps)
    assert ours == compare_mt_bleu(refs, hyps)
    assert SacreBLEU(tokenize="none", smooth_method="none").corpus_score(hyps, [refs]).score == 0
    # (6/7 · 4/6 · 2/5 · 1)^(1/4), and no brevity penalty
    assert ours == pytest.approx(100 * (6 / 7 * 4 / 6 * 2 / 5) ** 0.25, abs=1e-9)


# -- pieces ------------------------------------------------------------------------------

@pytest.mark.parametrize("cutoffs, integer", [
    ((1, 2, 3, 4, 5, 10, 100, 1000), True),
    ((-20, -10, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 11, 21), True),
    ((10.0, 20.0, 30.0, 90.0), False),
    ((0.25, 0.5, 0.75), True),
    ((3, 4, 4, 5), True),
    ((1, 2.0, 3.5, 4.5), True),  # "1.0" and "3.5": the label is the cutoff minus one
    ((7,), True),
])
def test_buckets_equal_compare_mts(cutoffs, integer):
    theirs = bucketers.Bucketer()
    theirs.set_bucket_cutoffs(list(cutoffs), num_type="int" if integer else "float")
    ours = cm.Buckets.of(cutoffs, integer)
    assert ours.labels == tuple(theirs.bucket_strs)
    values = [v / 4 for v in range(-100, 4100)]
    assert ours.indices(values).tolist() == [theirs.cutoff_into_bucket(v) for v in values]


def test_default_buckets_are_compare_mts():
    frequency = bucketers.FreqWordBucketer(freq_data=[["a"]])
    assert cm.FREQUENCY_BUCKETS.labels == tuple(frequency.bucket_strs)
    assert cm.LENGTH_BUCKETS.labels == tuple(bucketers.LengthSentenceBucketer().bucket_strs)
    assert cm.LENGTH_DIFF_BUCKETS.labels == tuple(
        bucketers.LengthDiffSentenceBucketer().bucket_strs)
    assert cm.SENTENCE_BLEU_BUCKETS == cm.Buckets(
        tuple(bucketers.ScoreSentenceBucketer("sentbleu").bucket_cutoffs),
        tuple(bucketers.ScoreSentenceBucketer("sentbleu").bucket_strs))


def test_descending_cutoffs_are_refused():
    with pytest.raises(ValueError, match="ascending"):
        cm.Buckets.of((10, 5))


def test_segment_counts_must_agree():
    with pytest.raises(ValueError, match="sys2 has 1 segments, the reference 2"):
        cm.compare_mt_figures(["a", "b"], [["a", "b"], ["a"]])


def test_lines_and_tokens_are_compare_mts(tmp_path):
    text = f"a b\r\nc\rd\u2028e\x85f\n{NBSP}g\th  i{NBSP}\n\n   \n\ufeffj"
    path = tmp_path / "text.txt"
    path.write_bytes(text.encode("utf-8"))
    ours = [cm.tokenize(line) for line in cm.read_lines(str(path))]
    assert ours == corpus_utils.load_tokens(str(path))
    assert ours == [["a", "b"], ["c"], ["d\u2028e\x85f"], ["g\th", "", "i"], [""], [""],
                    ["\ufeffj"]]
