"""N-gram counts of many sequences at once, with numpy sorts instead of Counters.

Counting one segment at a time costs a Python dict insertion per n-gram, which is
most of BLEU's and chrF's time on a corpus. Here every n-gram of a batch becomes one
integer code and a sort counts them all. The codes are exact (two n-grams share a code
only when they are equal), so the counts are the Counters' counts. A reference text
that several items share is counted once per batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Dict, List, Sequence

import numpy as np

from evalproto.metrics.evaluator import Item

_KEY_LIMIT = 2 ** 62
"""Keys (sequence, code) are packed in one int64 and kept below this bound."""


def _lengths(sequences: Sequence[Sequence[str]]) -> np.ndarray:
    return np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))


@dataclass(frozen=True)
class References:
    """A batch's references, each distinct text once: a tuning load repeats a reference
    for every hypothesis of its n-best list. Slot s, the s-th reference in the items'
    order, is reference number rank[s] of item owner[s] and has the text
    texts[distinct[s]]."""

    texts: List[str]
    owner: np.ndarray
    rank: np.ndarray
    distinct: np.ndarray

    @classmethod
    def of(cls, items: Sequence[Item]) -> References:
        refs_per_item = np.fromiter((len(refs) for refs, _ in items), dtype=np.int64,
                                    count=len(items))
        if not refs_per_item.all():
            raise ValueError("a segment needs at least one reference")
        index: Dict[str, int] = {}
        distinct = np.fromiter((index.setdefault(ref, len(index))
                                for refs, _ in items for ref in refs),
                               dtype=np.int64, count=int(refs_per_item.sum()))
        first_slot = np.cumsum(refs_per_item) - refs_per_item
        owner = np.repeat(np.arange(len(items)), refs_per_item)
        return cls(list(index), owner, np.arange(len(owner)) - first_slot[owner], distinct)


@dataclass(frozen=True)
class Sequences:
    """Many sequences end to end, as ids in [0, vocabulary); equal tokens share an id."""

    ids: np.ndarray
    lengths: np.ndarray
    vocabulary: int

    @classmethod
    def of_tokens(cls, sequences: Sequence[Sequence[str]]) -> Sequences:
        flat = list(chain.from_iterable(sequences))
        index = {token: number for number, token in enumerate(dict.fromkeys(flat))}
        ids = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
        return cls(ids, _lengths(sequences), len(index))

    @classmethod
    def of_characters(cls, texts: Sequence[str]) -> Sequences:
        # One code point per character, a lone surrogate too (Python's str holds them;
        # sacrebleu and the compiled kernel count them as characters).
        points = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"),
                               dtype=np.uint32)
        alphabet, ids = np.unique(points, return_inverse=True)
        return cls(ids.astype(np.int64), _lengths(texts), len(alphabet))


@dataclass(frozen=True)
class NgramCounts:
    """The distinct (sequence, n-gram) pairs of one order, sorted, and their counts.
    Codes are below `width` and comparable across all sequences of the batch."""

    sequence: np.ndarray
    code: np.ndarray
    count: np.ndarray
    width: int


def count_ngrams(sequences: Sequences, max_order: int) -> List[NgramCounts]:
    """The counts of every order from 1 to max_order."""
    lengths = sequences.lengths
    owner = np.repeat(np.arange(len(lengths)), lengths)
    end = np.repeat(np.cumsum(lengths), lengths)  # where each position's sequence ends
    codes = sequences.ids.copy()
    width = max(sequences.vocabulary, 1)
    starts = np.arange(len(codes))  # where an n-gram of the current order starts
    counted = []
    for n in range(1, max_order + 1):
        if n > 1:
            starts = starts[starts + n <= end[starts]]
            if width * sequences.vocabulary * len(lengths) >= _KEY_LIMIT:
                distinct, codes[starts] = np.unique(codes[starts], return_inverse=True)
                width = max(len(distinct), 1)
            codes[starts] = codes[starts] * sequences.vocabulary + sequences.ids[starts + n - 1]
            width *= sequences.vocabulary
        if len(lengths) * width >= _KEY_LIMIT:
            raise ValueError("too many tokens in one batch to count n-grams exactly")
        keys, count = np.unique(owner[starts] * width + codes[starts], return_counts=True)
        counted.append(NgramCounts(keys // width, keys % width, count, width))
    return counted


@dataclass(frozen=True)
class Matches:
    """The n-grams that a hypothesis shares with one of its references. Sequences
    0..hyps-1 of a batch are the hypotheses; distinct reference d is sequence hyps + d."""

    hyp_sequence: np.ndarray  # the hypothesis of each of the hypotheses' pairs
    reference: np.ndarray  # per match: the reference slot
    hyp_pair: np.ndarray  # per match: the index of the hypothesis' pair
    count: np.ndarray  # per match: the smaller of the two counts


def matches(counts: NgramCounts, hyps: int, references: References) -> Matches:
    """Looks up each hypothesis pair's n-gram in each reference of its item, one
    reference after another, so that the lookups of each go up in order."""
    hyp_end = int(np.searchsorted(counts.sequence, hyps))  # the hypotheses' pairs come first
    ref_keys = (counts.sequence[hyp_end:] - hyps) * counts.width + counts.code[hyp_end:]
    pair_item = counts.sequence[:hyp_end]
    pairs_per_item = np.bincount(pair_item, minlength=hyps)
    first_pair = np.cumsum(pairs_per_item) - pairs_per_item
    asks = pairs_per_item[references.owner]  # each reference is asked for its item's pairs
    slot = np.repeat(np.arange(len(references.owner)), asks)
    hyp_pair = (np.repeat(first_pair[references.owner] - (np.cumsum(asks) - asks), asks)
                + np.arange(len(slot)))
    wanted = references.distinct[slot] * counts.width + counts.code[hyp_pair]
    at = np.searchsorted(ref_keys, wanted)
    found = at < len(ref_keys)
    found[found] = ref_keys[at[found]] == wanted[found]
    hyp_pair = hyp_pair[found]
    return Matches(pair_item, slot[found], hyp_pair,
                   np.minimum(counts.count[hyp_pair], counts.count[hyp_end:][at[found]]))
