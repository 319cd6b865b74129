"""The table that every reduction reads: one metric's stats rows for every system,
aligned segment by segment, with what lies beside the rows.

Every kind of input becomes one: a corpus scored by an evaluator (a row per segment),
an LM Challenge log (a row per event, units = messages, groups = users), an LM Zoo
surprisal table (a row per token, units and groups = sentences), a merged set of stats
files. The reductions (evalproto.stats.reductions) serve them all alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, List, Optional, Protocol, Sequence, Tuple, TypeVar

import numpy as np

from evalproto.base.items import SegmentNumbers
from evalproto.stats.resampling import (
    DEFAULT_SEED,
    Figures,
    bootstrap,
    checked_total,
    confidence_interval,
    estimate_ci,
)


class Scorer(Protocol):
    """A metric as the reductions see it: stat names and a score of summed rows. A
    metric with several outputs (LM Challenge's rates) also has `figures`, giving each
    output for summed rows, and may name the `tested` ones (that get intervals and
    tests); `resample_dtype` is the type its bootstrap sums are scored in."""

    @property
    def stat_names(self) -> Optional[Tuple[str, ...]]: ...

    @property
    def higher_is_better(self) -> bool: ...

    def signature(self) -> str: ...

    def score_many(self, vectors: np.ndarray) -> np.ndarray: ...


MAIN = "score"
"""The figure of a metric with one output."""


def score_name(metric: Scorer, label: str) -> str:
    """A metric's score name as sacrebleu names it (an evaluator's `score_name`: BLEU,
    chrF2++, TER), or its own name (an external evaluator's INFO name), or `label`."""
    return getattr(metric, "score_name", None) or getattr(metric, "name", None) or label


def figures_of(metric: Scorer) -> Figures:
    """The metric's figures: its own, or its score as the one figure "score"."""
    own = getattr(metric, "figures", None)
    if own is not None:
        return own
    return lambda totals: {MAIN: np.asarray(metric.score_many(totals))}


@dataclass
class StatsTable:
    """One metric's rows for every system (a (segments, stats) array each, in the same
    segment order), the segments' ids, and what reductions may use: each segment's
    groups (tags), the resampling unit of each row (None: each row is its own), and
    the number of references (for signatures)."""

    label: str
    metric: Scorer
    rows: Dict[str, np.ndarray]
    ids: Sequence[str] = field(default_factory=list)
    groups: Optional[List[List[str]]] = None
    units: Optional[Sequence[Hashable]] = None
    nrefs: Any = None
    group_key: str = "group"

    def __post_init__(self) -> None:
        if not self.ids and self.rows:
            self.ids = SegmentNumbers(len(next(iter(self.rows.values()))))

    @property
    def stat_names(self) -> Tuple[str, ...]:
        """The names of the columns."""
        return tuple(self.metric.stat_names or ())

    @property
    def systems(self) -> List[str]:
        """The systems' names, in order (the first is the baseline of paired tests)."""
        return list(self.rows)

    def figures(self, totals: np.ndarray) -> Dict[str, np.ndarray]:
        """Every figure the metric reports, by name, for each row of summed statistics."""
        return figures_of(self.metric)(totals)

    @property
    def resample_dtype(self) -> type:
        """The type resamples are summed in (see Evaluator.resample_dtype)."""
        return getattr(self.metric, "resample_dtype", np.float64)

    @property
    def score_name(self) -> str:
        """The score's name as sacrebleu names it (BLEU, chrF2++, TER); else the
        metric's own name, or the table's label."""
        return score_name(self.metric, self.label)

    @property
    def extra_decimals(self) -> int:
        """Decimals to show beyond a percentage's (see Evaluator.extra_decimals)."""
        return int(getattr(self.metric, "extra_decimals", 0))

    def verbose_score(self, total: np.ndarray) -> str:
        """What sacrebleu prints after the score of these summed statistics (BLEU's
        precisions and brevity penalty), or "" for a metric that prints nothing more."""
        verbose = getattr(self.metric, "verbose_score", None)
        return verbose(total) if verbose is not None else ""

    def _system_rows(self, system: Optional[str]) -> Tuple[str, np.ndarray]:
        name = system if system is not None else self.systems[0]
        if name not in self.rows:
            raise KeyError(f"no system {name!r}; the table holds {', '.join(self.systems)}")
        return name, self.rows[name]

    def total(self, system: Optional[str] = None) -> np.ndarray:
        """The summed statistics of a system (the first by default)."""
        name, rows = self._system_rows(system)
        return checked_total(rows, self.stat_names, f"{name}, {self.label}")

    def score(self, system: Optional[str] = None) -> float:
        """The corpus score of a system (the first by default)."""
        values = self.figures(self.total(system)[None, :])
        return float(next(iter(values.values()))[0])

    def bootstrap(self, samples: int = 1000, seed: Optional[int] = DEFAULT_SEED,
                  system: Optional[str] = None) -> np.ndarray:
        """The scores of `samples` bootstrap resamples of a system's segments, with
        sacrebleu's draws and arithmetic."""
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
            raise ValueError(f"samples must be a whole number >= 1, got {samples!r}")
        _, rows = self._system_rows(system)
        values = bootstrap(rows, self.figures, samples, seed, self.resample_dtype)
        return next(iter(values.values()))

    def confidence_interval(self, samples: int = 1000, seed: Optional[int] = DEFAULT_SEED,
                            system: Optional[str] = None, paired: bool = False
                            ) -> Tuple[float, float]:
        """(mean, half-width) of the 95% bootstrap interval of a system's score, as
        sacrebleu's --confidence computes it (with `paired`, as its paired bootstrap
        computes the baseline's: numpy's mean instead of statistics.mean)."""
        interval = estimate_ci if paired else confidence_interval
        mean, half_width = interval(self.bootstrap(samples, seed, system))
        return float(mean), float(half_width)

    def subset(self, picked: np.ndarray) -> StatsTable:
        """The same table on some of its segments."""
        return StatsTable(self.label, self.metric,
                          {name: rows[picked] for name, rows in self.rows.items()},
                          [self.ids[i] for i in picked.tolist()], None,
                          None if self.units is None else [self.units[i] for i in picked.tolist()],
                          self.nrefs, self.group_key)


def unit_rows(rows: np.ndarray, units: Optional[Sequence[Hashable]]) -> np.ndarray:
    """Rows summed over runs of equal consecutive units (an LM log's messages), the
    things a bootstrap resamples; the rows themselves when there are no units."""
    if units is None:
        return rows
    starts = [i for i, unit in enumerate(units) if i == 0 or unit != units[i - 1]]
    with np.errstate(over="ignore"):  # an overflowing total is an error: checked_total
        return np.add.reduceat(rows, starts, axis=0) if starts else rows


Key = TypeVar("Key", bound=Hashable)


def rows_by_key(keys: Sequence[Key]) -> Dict[Key, np.ndarray]:
    """For every distinct key, in order of first appearance, the rows that hold it, in
    order; in one pass over the rows (a pass per key is slow with thousands of keys)."""
    codes: Dict[Key, int] = {}
    labels = np.fromiter((codes.setdefault(key, len(codes)) for key in keys), dtype=np.intp,
                         count=len(keys))
    ends = np.cumsum(np.bincount(labels, minlength=len(codes)))
    return dict(zip(codes, np.split(np.argsort(labels, kind="stable"), ends[:-1])))


def group_rows(groups: Sequence[Sequence[str]]) -> Dict[str, np.ndarray]:
    """For every tag, in order of first appearance, the segments that carry it."""
    carriers = [(segment, tag) for segment, tags in enumerate(groups)
                for tag in dict.fromkeys(tags)]
    segments = np.array([segment for segment, _ in carriers], dtype=np.intp)
    return {tag: segments[found]
            for tag, found in rows_by_key([tag for _, tag in carriers]).items()}
