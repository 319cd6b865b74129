"""What every source of statistics rows offers: an in-process Evaluator, an evaluator
command over the pipe, a pool of either, or a metric whose evaluator lives on a Dask
cluster's workers."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Deque,
    Dict,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
)

import numpy as np

from evalproto.base.errors import EvalprotoError, EvaluatorWarning, warn
from evalproto.base.items import Item
from evalproto.base.progress import QUIET, Progress

CHUNK_ITEMS = 2000
"""The most items sent to a source at a time, so that memory stays flat."""
FIRST_CHUNK_ITEMS = 50
CHUNK_SECONDS = 0.5
"""Chunks start at FIRST_CHUNK_ITEMS items and double while one takes less than
CHUNK_SECONDS (and halve when one takes four times that), so that progress moves
about twice a second with a slow evaluator too, and a fast one still gets batches
large enough to count in bulk."""


class StatsSource(Protocol):
    """What an in-process Evaluator and an EvaluatorProcess have in common."""

    @property
    def stat_names(self) -> Optional[Tuple[str, ...]]: ...

    @property
    def higher_is_better(self) -> bool: ...

    def signature(self) -> str: ...

    def stats_many(self, items: Sequence[Item]) -> np.ndarray: ...

    def score_many(self, vectors: np.ndarray) -> np.ndarray: ...

    def for_sentences(self) -> StatsSource: ...


Sender = Callable[[Sequence[Any]], Callable[[], np.ndarray]]
"""A source's `stats_later`: it takes items and returns the function that gives their
rows."""


@dataclass
class Stripped:
    """The segments whose whitespace at an end of a text the protocol dropped: how many,
    and where the first was. Tallies of several runs add up (`add`)."""

    count: int = 0
    first: str = ""

    def add(self, other: Stripped) -> None:
        self.first = self.first or other.first
        self.count += other.count

    def warn(self, label: str) -> None:
        """One warning for all of them, if there were any."""
        if self.count:
            warn(EvaluatorWarning(
                f"{label}: {self.count} segment{'s' if self.count > 1 else ''} (the first: "
                f"{self.first}) had whitespace at an end of a reference or hypothesis, which "
                f"the protocol strips: the evaluator command scored them without it, where "
                f"an evaluator in process scores every text as given, as sacrebleu does"))


def corpus_rows(source: StatsSource, refs: Sequence[Sequence[str]],
                systems: Mapping[str, Sequence[str]], progress: Progress = QUIET,
                first_segment: int = 1, label: str = "", stripped: Optional[Stripped] = None
                ) -> Dict[str, np.ndarray]:
    """Every system's rows from one source. Items go segment by segment across the
    systems, so an evaluator's reference cache is hit by each system in turn, and in
    chunks, so that progress moves and only a chunk's texts are decoded at a time; the
    next chunk is made while an evaluator command scores the last one (`stats_later`).
    A failure on one item is reported as the segment (numbered from `first_segment`)
    of the system it came from. A chunk that cannot be sent ends the sending, and is
    reported once the chunks sent before it are in (their failure first).

    A source that speaks the protocol (`strips_whitespace`) never sees the whitespace
    at the ends of a text: the segments where that happened are counted into
    `stripped`, or, without one, said in one warning at the end."""
    names = list(systems)
    segments = len(refs)
    phase = progress.start(f"scoring {label}".strip(), segments * len(names))
    later: Optional[Sender] = getattr(source, "stats_later", None)
    send = later or _at_once(source)
    tally = Stripped() if getattr(source, "strips_whitespace", False) else None
    ahead = 1 if later else 0  # chunks sent before the rows of one are due
    in_flight: Deque[Tuple[int, int, float, Callable[[], np.ndarray]]] = deque()
    found: Dict[str, np.ndarray] = {}
    start, size = 0, FIRST_CHUNK_ITEMS
    while start < segments or in_flight:
        if start < segments:
            stop = min(start + max(1, size // len(names)), segments)
            columns = [systems[name][start:stop] for name in names]
            items = [(segment_refs, column[i]) for i, segment_refs in
                     enumerate(refs[start:stop]) for column in columns]
            try:
                rows_when_done, start_next = send(items), stop
            except Exception as exc:  # raised in its turn; nothing more is sent
                rows_when_done, start_next = _raising(exc), segments
            else:  # the items were good enough to be sent
                if tally is not None:
                    _count_stripped(tally, items, names, first_segment + start)
            in_flight.append((start, stop, time.monotonic(), rows_when_done))
            start = start_next
            if len(in_flight) <= ahead and start < segments:
                continue
        first, last, began, rows_when_done = in_flight.popleft()
        try:
            rows = rows_when_done()
        except EvalprotoError as exc:
            if exc.item is None:
                raise
            segment, system = divmod(exc.item, len(names))
            raise exc.at(f"segment {first_segment + first + segment} of {names[system]}"
                         ) from None
        rows = rows.reshape(last - first, len(names), -1)
        if not found:
            found = {name: np.empty((segments, rows.shape[2])) for name in names}
        for j, name in enumerate(names):
            found[name][first:last] = rows[:, j, :]
        phase.advance(rows.shape[0] * len(names))
        size = _next_chunk_size(size, time.monotonic() - began)
    phase.close()
    if tally is not None:
        if stripped is None:
            tally.warn(f"evaluator {label or 'command'}")
        else:
            stripped.add(tally)
    if not found:
        width = len(source.stat_names or ())
        return {name: np.zeros((0, width)) for name in names}
    return found


def _at_once(source: StatsSource) -> Sender:
    """A `stats_later` for a source that has none: it scores the items at once."""

    def at_once(items: Sequence[Item]) -> Callable[[], np.ndarray]:
        rows = source.stats_many(items)
        return lambda: rows

    return at_once


def _count_stripped(tally: Stripped, items: List[Tuple[Sequence[str], str]],
                    names: List[str], first_segment: int) -> None:
    """Count the segments among `items` (each segment's item of every system in turn)
    that have a text with whitespace at an end."""
    systems = len(names)
    for segment in range(len(items) // systems):
        edged = [system for system in range(systems)
                 if _edged_item(items[segment * systems + system])]
        if edged:
            if not tally.count:
                tally.first = f"segment {first_segment + segment} of {names[edged[0]]}"
            tally.count += 1


def _edged_item(item: Tuple[Sequence[str], str]) -> bool:
    refs, hyp = item
    return any(text[:1].isspace() or text[-1:].isspace() for text in (*refs, hyp))


def _raising(failure: Exception) -> Callable[[], np.ndarray]:
    """A chunk's rows that are its failure to be sent, raised when they are due."""

    def failed() -> np.ndarray:
        raise failure

    return failed


def _next_chunk_size(size: int, seconds: float) -> int:
    if seconds < CHUNK_SECONDS:
        return min(CHUNK_ITEMS, size * 2)
    if seconds > 4 * CHUNK_SECONDS:
        return max(1, size // 2)
    return size
