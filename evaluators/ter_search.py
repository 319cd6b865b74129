"""TER's edit search: Tercom's greedy shifts scored by a beam edit distance, with the
results of sacrebleu's lib_ter, faster.

sacrebleu's lib_ter is the specification here, quirks included, because each of them
changes some scores: the limits below; the preference among equally cheap edit
operations (substitution or match, then deletion, then insertion, as the trace is
read backwards); the ranking of shift candidates; and the cache of edit-distance rows
keyed by hypothesis prefix, which stops growing at a fixed size. What differs is speed: a
matrix row is a list of costs and a list of operations instead of a list of tuples,
and the inner loop builds no tuples. tests/test_ter_search.py compares edits and
traces with lib_ter's on real and generated text.
"""

from __future__ import annotations

import math
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

MAX_SHIFT_SIZE = 10
MAX_SHIFT_DIST = 50
BEAM_WIDTH = 25
MAX_CACHE_SIZE = 10_000
MAX_SHIFT_CANDIDATES = 1_000
INFINITY = 10 ** 16

MATCH, SUBSTITUTE, INSERT, DELETE, UNDEFINED = " ", "s", "i", "d", "x"
_FLIPPED = str.maketrans(INSERT + DELETE, DELETE + INSERT)

Row = Tuple[List[int], List[str]]  # the costs and the operations of one matrix row


def translation_edit_rate(hyp: List[str], ref: List[str]) -> Tuple[int, int]:
    """The edits (shifts plus edit distance) from hyp to ref, and ref's length."""
    if not ref:
        return len(hyp), 0
    distance = BeamEditDistance(ref)
    shifts = checked = 0
    while True:
        gain, shifted, checked = _best_shift(hyp, ref, distance, checked)
        if checked >= MAX_SHIFT_CANDIDATES or gain <= 0:
            break
        shifts += 1
        hyp = shifted
    return shifts + distance(hyp)[0], len(ref)


class BeamEditDistance:
    """Edit distance to one reference, within a beam around the length-scaled
    diagonal, with the operations' trace, reusing rows of earlier hypotheses that
    share a prefix."""

    def __init__(self, ref: Sequence[str]) -> None:
        self.ref = ref
        self._first_row: Row = (list(range(len(ref) + 1)), [INSERT] * (len(ref) + 1))
        self._cache: dict = {}  # word -> (next level, row)
        self._cache_size = 0

    def __call__(self, hyp: Sequence[str]) -> Tuple[int, str]:
        rows = [self._first_row]
        node = self._cache
        for word in hyp:
            if word not in node:
                break
            node, row = node[word]
            rows.append(row)
        cached = len(rows)
        self._fill(hyp, rows)
        if self._cache_size < MAX_CACHE_SIZE:
            for word, row in zip(hyp[cached - 1:], rows[cached:]):
                node[word] = ({}, row)
                node = node[word][0]
                self._cache_size += 1
        return rows[-1][0][-1], self._trace(rows)

    def _fill(self, hyp: Sequence[str], rows: List[Row]) -> None:
        """Append the rows after the cached ones, one per remaining hypothesis word."""
        ref, width = self.ref, len(self.ref) + 1
        ratio = len(ref) / len(hyp) if hyp else 1
        beam = math.ceil(ratio / 2 + BEAM_WIDTH) if BEAM_WIDTH < ratio / 2 else BEAM_WIDTH
        for i in range(len(rows), len(hyp) + 1):
            above = rows[i - 1][0]
            costs, operations = [INFINITY] * width, [UNDEFINED] * width
            diagonal = math.floor(i * ratio)
            first = max(0, diagonal - beam)
            end = width if i == len(hyp) else min(width, diagonal + beam)
            word = hyp[i - 1]
            left = INFINITY
            if first == 0:
                left = costs[0] = above[0] + 1
                operations[0] = DELETE
                first = 1
            for j, ref_word, cost, up in zip(range(first, end), ref[first - 1:end - 1],
                                             above[first - 1:end - 1], above[first:end]):
                if word == ref_word:
                    operation = MATCH
                else:
                    cost += 1
                    operation = SUBSTITUTE
                if up + 1 < cost:
                    cost = up + 1
                    operation = DELETE
                if left + 1 < cost:
                    cost = left + 1
                    operation = INSERT
                if cost >= INFINITY:  # only what beats the initial infinity is taken
                    cost, operation = INFINITY, UNDEFINED
                costs[j] = left = cost
                operations[j] = operation
            rows.append((costs, operations))

    def _trace(self, rows: List[Row]) -> str:
        """The operations from the last cell back to the first, in forward order."""
        trace = []
        i, j = len(rows) - 1, len(self.ref)
        while i > 0 or j > 0:
            operation = rows[i][1][j]
            trace.append(operation)
            if operation in (MATCH, SUBSTITUTE):
                i, j = i - 1, j - 1
            elif operation == INSERT:
                j -= 1
            elif operation == DELETE:
                i -= 1
            else:
                raise RuntimeError(f"TER trace reached an undefined cell at ({i}, {j})")
        return "".join(reversed(trace))


def _best_shift(hyp: List[str], ref: Sequence[str], distance: BeamEditDistance,
                checked: int) -> Tuple[int, List[str], int]:
    """The shift of a hypothesis span that lowers the edit distance most, ranked as
    Tercom does (gain, then length, then the earliest span, then the earliest target),
    its gain, and the running count of candidates tried."""
    before, inverse_trace = distance(hyp)
    alignment, ref_errors, hyp_errors = _alignment(inverse_trace.translate(_FLIPPED))
    best: Optional[tuple] = None
    for start_h, start_r, length in _shared_spans(hyp, ref):
        if not any(hyp_errors[start_h:start_h + length]):
            continue
        if not any(ref_errors[start_r:start_r + length]):
            continue
        if start_h <= alignment[start_r] < start_h + length:
            continue
        previous = -1
        for offset in range(-1, length):
            if start_r + offset == -1:
                target = 0
            elif start_r + offset in alignment:
                target = alignment[start_r + offset] + 1
            else:
                break
            if target == previous:
                continue
            previous = target
            shifted = _shifted(hyp, start_h, length, target)
            candidate = (before - distance(shifted)[0], length, -start_h, -target, shifted)
            checked += 1
            if best is None or candidate > best:
                best = candidate
        if checked >= MAX_SHIFT_CANDIDATES:
            break
    if best is None:
        return 0, hyp, checked
    return best[0], best[4], checked


def _shifted(words: List[str], start: int, length: int, target: int) -> List[str]:
    """words with the span [start, start + length) moved to before index target."""
    span = words[start:start + length]
    if target < start:
        return words[:target] + span + words[target:start] + words[start + length:]
    if target > start + length:
        return words[:start] + words[start + length:target] + span + words[target:]
    return (words[:start] + words[start + length:length + target] + span
            + words[length + target:])


def _shared_spans(hyp: Sequence[str], ref: Sequence[str]) -> Iterator[Tuple[int, int, int]]:
    """(hyp start, ref start, length) of every equal span up to MAX_SHIFT_SIZE words,
    between starts at most MAX_SHIFT_DIST apart, shortest first for each start pair."""
    ref_positions: Dict[str, List[int]] = {}
    for position, word in enumerate(ref):
        ref_positions.setdefault(word, []).append(position)
    for start_h, word in enumerate(hyp):
        limit = min(MAX_SHIFT_SIZE, len(hyp) - start_h)
        for start_r in ref_positions.get(word, ()):
            if abs(start_r - start_h) > MAX_SHIFT_DIST:
                continue
            length = 1
            yield start_h, start_r, 1
            longest = min(limit, len(ref) - start_r)
            while length < longest and hyp[start_h + length] == ref[start_r + length]:
                length += 1
                yield start_h, start_r, length


def _alignment(trace: str) -> Tuple[Dict[int, int], List[int], List[int]]:
    """From the trace of rewriting ref into hyp: each ref position's hyp position, and
    which ref and which hyp positions are errors."""
    hyp_position = ref_position = -1
    alignment: Dict[int, int] = {}
    ref_errors: List[int] = []
    hyp_errors: List[int] = []
    for operation in trace:
        if operation in (MATCH, SUBSTITUTE):
            hyp_position += 1
            ref_position += 1
            alignment[ref_position] = hyp_position
            error = int(operation == SUBSTITUTE)
            hyp_errors.append(error)
            ref_errors.append(error)
        elif operation == INSERT:
            hyp_position += 1
            hyp_errors.append(1)
        else:
            ref_position += 1
            alignment[ref_position] = hyp_position
            ref_errors.append(1)
    return alignment, ref_errors, hyp_errors
