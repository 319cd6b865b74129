"""Statistics rows held in the narrowest type that keeps every value exact.

A corpus's rows are whole numbers for most metrics (BLEU's and chrF's counts, TER's
edits and lengths against one reference), and small ones: ten million segments of BLEU
take 4 GB as float64 and 100 MB as uint8. Which type a table needs is read from its
values as they come (a 300-word segment makes BLEU's lengths uint16), never assumed
from the metric; anything that is not a whole number (TER's average over three
references), or a negative zero, keeps float64. The reductions convert where they need
to (evalproto.stats.resampling), so that every figure is the one float64 rows give.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

_RANGES = tuple((np.dtype(kind), int(np.iinfo(kind).min), int(np.iinfo(kind).max))
                for kind in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32))
WHOLE_TYPES = tuple(kind for kind, _, _ in _RANGES)
"""The whole-number types rows may be held in, narrowest first."""
_LEAST, _MOST = min(least for _, least, _ in _RANGES), max(most for _, _, most in _RANGES)


def narrowest(rows: np.ndarray) -> np.dtype:
    """The first of WHOLE_TYPES that holds every value of `rows` exactly, or float64.
    In few passes: corpus_rows asks for every chunk."""
    rows = np.asarray(rows)
    if rows.dtype in WHOLE_TYPES:
        return rows.dtype
    if rows.size == 0:
        return WHOLE_TYPES[0]
    low, high = rows.min(), rows.max()
    if not _LEAST <= low <= high <= _MOST:  # NaN fails this too
        return np.dtype(np.float64)
    whole = rows.astype(np.int64)
    if not np.array_equal(whole, rows):
        return np.dtype(np.float64)
    if low <= 0 and np.any(np.signbit(rows) & (rows == 0)):  # -0.0 would lose its sign
        return np.dtype(np.float64)
    for kind, least, most in _RANGES:
        if least <= low and high <= most:
            return kind
    return np.dtype(np.float64)


def wider(first: np.dtype, second: np.dtype) -> np.dtype:
    """The narrowest type that holds every value of both types: one of WHOLE_TYPES, or
    float64 (which holds every value of each exactly)."""
    joined = np.promote_types(first, second)
    return joined if joined in WHOLE_TYPES else np.dtype(np.float64)


def as_whole(rows: np.ndarray, kinds: tuple = WHOLE_TYPES) -> Optional[np.ndarray]:
    """`rows` in the narrowest of `kinds` that holds every value exactly (the array
    itself if it is of one already), or None if none does."""
    kind = narrowest(rows)
    if kind not in kinds:
        return None
    return rows if rows.dtype == kind else rows.astype(kind)


class RowStore:
    """The rows of `count` segments, `width` statistics each, filled a chunk at a time
    (`put`). With `narrow`, held in the narrowest type that holds every value put so
    far (a chunk that needs a wider type widens the whole, one copy), a column at a time
    (Fortran order: the bootstrap's products read a block of segments column by
    column); otherwise in float64, as every source gives them."""

    def __init__(self, count: int, width: int, narrow: bool) -> None:
        self.narrow = narrow
        self.rows = (np.zeros((count, width), WHOLE_TYPES[0], order="F") if narrow
                     else np.empty((count, width)))

    def put(self, start: int, rows: np.ndarray, kind: Optional[np.dtype] = None) -> None:
        """Rows of segments start, start + 1, ...; `kind`, if given, a type that holds
        them (narrowest of a larger array that holds them: corpus_rows asks once for
        every system's rows of a chunk)."""
        if self.narrow:
            kind = wider(self.rows.dtype, narrowest(rows) if kind is None else kind)
            if kind != self.rows.dtype:
                self.rows = self.rows.astype(kind, order="F")
        self.rows[start:start + len(rows)] = rows
