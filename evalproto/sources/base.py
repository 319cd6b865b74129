"""What every source of statistics rows offers: an in-process Evaluator, an evaluator
command over the pipe, a pool of either, or a metric whose evaluator lives on a Dask
cluster's workers."""

from __future__ import annotations

import time
from typing import Dict, Optional, Protocol, Sequence, Tuple

import numpy as np

from evalproto.base.errors import EvalprotoError
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

    stat_names: Optional[Tuple[str, ...]]

    @property
    def higher_is_better(self) -> bool: ...

    def signature(self) -> str: ...

    def stats_many(self, items: Sequence[Item], strip: bool = True) -> np.ndarray: ...

    def score_many(self, vectors: np.ndarray) -> np.ndarray: ...

    def for_sentences(self) -> StatsSource: ...


def corpus_rows(source: StatsSource, refs: Sequence[Sequence[str]],
                systems: Dict[str, Sequence[str]], progress: Progress = QUIET,
                first_segment: int = 1, label: str = "", strip: bool = True
                ) -> Dict[str, np.ndarray]:
    """Every system's rows from one source. Items go segment by segment across the
    systems, so an evaluator's reference cache is hit by each system in turn, and in
    chunks, so that progress moves and only a chunk's texts are decoded at a time. A
    failure on one item is reported as the segment (numbered from `first_segment`) of
    the system it came from."""
    names = list(systems)
    segments = len(refs)
    phase = progress.start(f"scoring {label}".strip(), segments * len(names))
    found: Dict[str, np.ndarray] = {}
    start, size = 0, FIRST_CHUNK_ITEMS
    while start < segments:
        began = time.monotonic()
        stop = min(start + max(1, size // len(names)), segments)
        columns = [systems[name][start:stop] for name in names]
        items = [(segment_refs, column[i]) for i, segment_refs in enumerate(refs[start:stop])
                 for column in columns]
        try:
            rows = source.stats_many(items) if strip else source.stats_many(items, strip)
        except EvalprotoError as exc:
            if exc.item is None:
                raise
            segment, system = divmod(exc.item, len(names))
            raise exc.at(f"segment {first_segment + start + segment} of {names[system]}"
                         ) from None
        rows = rows.reshape(stop - start, len(names), -1)
        if not found:
            found = {name: np.empty((segments, rows.shape[2])) for name in names}
        for j, name in enumerate(names):
            found[name][start:stop] = rows[:, j, :]
        phase.advance(len(items))
        start = stop
        size = _next_chunk_size(size, time.monotonic() - began)
    phase.close()
    if not found:
        width = len(source.stat_names or ())
        return {name: np.zeros((0, width)) for name in names}
    return found


def _next_chunk_size(size: int, seconds: float) -> int:
    if seconds < CHUNK_SECONDS:
        return min(CHUNK_ITEMS, size * 2)
    if seconds > 4 * CHUNK_SECONDS:
        return max(1, size // 2)
    return size
