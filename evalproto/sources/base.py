"""What every source of statistics rows offers: an in-process Evaluator, an evaluator
command over the pipe, a pool of either, or a metric whose evaluator lives on a Dask
cluster's workers."""

from __future__ import annotations

import queue
import threading
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
from evalproto.base.narrow import RowStore, narrowest
from evalproto.base.progress import QUIET, Progress

CHUNK_ITEMS = 2000
"""The most items sent to a source at a time, so that memory stays flat."""
FIRST_CHUNK_ITEMS = 50
CHUNK_SECONDS = 0.5
"""Chunks start at FIRST_CHUNK_ITEMS items and double while one takes less than
CHUNK_SECONDS (and halve when one takes four times that), so that progress moves
about twice a second with a slow evaluator too, and a fast one still gets batches
large enough to count in bulk: while a chunk takes less than CHUNK_SECONDS /
(2 * FAST_GROWTH), as a compiled kernel's does, they grow FAST_GROWTH times at once
(its first chunks would otherwise be too small to share among its threads)."""
FAST_GROWTH = 8
"""How many times at once a chunk grows while it takes under CHUNK_SECONDS / 16."""


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
ColumnsSender = Callable[[Sequence[Sequence[str]], Sequence[Sequence[str]]],
                         Callable[[], np.ndarray]]
"""A chunk's references and hypothesis columns (a system's each) to the function that
gives the rows of every system's item of each segment, segment by segment."""


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
                first_segment: int = 1, label: str = "", stripped: Optional[Stripped] = None,
                narrow: bool = False) -> Dict[str, np.ndarray]:
    """Every system's rows from one source: float64, or with `narrow` in the narrowest
    type that holds them exactly (evalproto.base.narrow; for reductions, which take any
    type). Items go segment by segment across the systems, so an evaluator's reference
    cache is hit by each system in turn, and in chunks, so that progress moves and only
    a chunk's texts are decoded at a time; the next chunk is made while the source
    scores the last one (an evaluator command's `stats_later`; for any other source,
    _Scorer's thread, where compiled kernels leave the GIL). A failure on one item is
    reported as the segment (numbered from `first_segment`) of the system it came from.
    A chunk that cannot be sent ends the sending, and is reported once the chunks sent
    before it are in (their failure first).

    A source that speaks the protocol (`strips_whitespace`) never sees the whitespace
    at the ends of a text: the segments where that happened are counted into
    `stripped`, or, without one, said in one warning at the end."""
    later: Optional[Sender] = getattr(source, "stats_later", None)
    if later is not None:
        return _corpus_rows(source, lambda chunk, columns: later(_items(chunk, columns)), refs,
                            systems, progress, first_segment, label, stripped, narrow)
    scorer = _Scorer(source)
    try:
        rows = _corpus_rows(source, scorer.later, refs, systems, progress, first_segment,
                            label, stripped, narrow)
    except Exception:
        scorer.close()
        raise
    except BaseException:  # Ctrl-C, SIGTERM: the run ends, and its caller ends the source's
        scorer.close(wait=False)  # processes, which the thread may be waiting for
        raise
    scorer.close()
    return rows


def _corpus_rows(source: StatsSource, send: ColumnsSender, refs: Sequence[Sequence[str]],
                 systems: Mapping[str, Sequence[str]], progress: Progress, first_segment: int,
                 label: str, stripped: Optional[Stripped], narrow: bool
                 ) -> Dict[str, np.ndarray]:
    """corpus_rows, with `send` taking each chunk's references and hypothesis columns."""
    names = list(systems)
    segments = len(refs)
    phase = progress.start(f"scoring {label}".strip(), segments * len(names))
    tally = Stripped() if getattr(source, "strips_whitespace", False) else None
    ahead = 1  # chunks sent before the rows of one are due
    in_flight: Deque[Tuple[int, int, float, Callable[[], np.ndarray]]] = deque()
    found: Dict[str, RowStore] = {}
    start, size = 0, FIRST_CHUNK_ITEMS
    while start < segments or in_flight:
        if start < segments:
            stop = min(start + max(1, size // len(names)), segments)
            chunk_refs = refs[start:stop]
            columns = [systems[name][start:stop] for name in names]
            try:
                rows_when_done, start_next = send(chunk_refs, columns), stop
            except Exception as exc:  # raised in its turn; nothing more is sent
                rows_when_done, start_next = _raising(exc), segments
            else:  # the items were good enough to be sent
                if tally is not None:
                    _count_stripped(tally, chunk_refs, columns, names, first_segment + start)
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
            found = {name: RowStore(segments, rows.shape[2], narrow) for name in names}
        kind = narrowest(rows) if narrow else None  # one type for every system's rows
        for j, name in enumerate(names):
            found[name].put(first, rows[:, j, :], kind)
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
    return {name: store.rows for name, store in found.items()}


def _items(refs: Sequence[Sequence[str]], columns: Sequence[Sequence[str]]) -> List[Item]:
    """Every system's item of each segment, segment by segment."""
    return [(segment_refs, column[i]) for i, segment_refs in enumerate(refs)  # type: ignore[misc]
            for column in columns]


class _Scorer:
    """A `stats_later` for a source that has none: a thread of its own scores each
    chunk in turn (with threading and a queue: concurrent.futures costs a plain corpus
    score its import), by the source's stats_columns where it has one (an Evaluator:
    no Python object per item where its kernel reads the texts)."""

    def __init__(self, source: StatsSource) -> None:
        self._source = source
        self._columns = getattr(source, "stats_columns", None)
        self._chunks: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._score, name="scoring", daemon=True)
        self._thread.start()

    def later(self, refs: Sequence[Sequence[str]], columns: Sequence[Sequence[str]]
              ) -> Callable[[], np.ndarray]:
        """The function that gives the rows of every system's item of each segment
        (or raises their failure)."""
        reply: queue.SimpleQueue = queue.SimpleQueue()
        self._chunks.put((refs, columns, reply))

        def rows() -> np.ndarray:
            found, failure = reply.get()
            if failure is not None:
                raise failure
            return found

        return rows

    def close(self, wait: bool = True) -> None:
        """End the thread: chunks not begun are dropped, and the one being scored, if
        any, is waited for (`wait`), so that nothing scores with the source once
        corpus_rows has returned or raised (its caller may go on to score with the same
        source)."""
        while True:
            try:
                self._chunks.get_nowait()
            except queue.Empty:
                break
        self._chunks.put(None)
        if wait:
            self._thread.join()

    def _score(self) -> None:
        while True:
            chunk = self._chunks.get()
            if chunk is None:
                return
            refs, columns, reply = chunk
            try:
                rows = (self._columns(refs, columns) if self._columns is not None
                        else self._source.stats_many(_items(refs, columns)))
                reply.put((rows, None))
            except BaseException as failure:  # raised where the rows are due
                reply.put((None, failure))


def _raising(failure: Exception) -> Callable[[], np.ndarray]:
    """A chunk's rows that are its failure to be sent, raised when they are due."""

    def failed() -> np.ndarray:
        raise failure

    return failed


def _count_stripped(tally: Stripped, refs: Sequence[Sequence[str]],
                    columns: Sequence[Sequence[str]], names: List[str],
                    first_segment: int) -> None:
    """Count the segments of a chunk that have a text with whitespace at an end."""
    for segment, segment_refs in enumerate(refs):
        edged = [system for system, column in enumerate(columns)
                 if _edged_item((segment_refs, column[segment]))]
        if edged:
            if not tally.count:
                tally.first = f"segment {first_segment + segment} of {names[edged[0]]}"
            tally.count += 1


def _edged_item(item: Tuple[Sequence[str], str]) -> bool:
    refs, hyp = item
    return any(text[:1].isspace() or text[-1:].isspace() for text in (*refs, hyp))


def _next_chunk_size(size: int, seconds: float) -> int:
    if seconds < CHUNK_SECONDS / (2 * FAST_GROWTH):
        return min(CHUNK_ITEMS, size * FAST_GROWTH)
    if seconds < CHUNK_SECONDS:
        return min(CHUNK_ITEMS, size * 2)
    if seconds > 4 * CHUNK_SECONDS:
        return max(1, size // 2)
    return size
