"""Dynabench's Dynascore (Ma et al. 2021, "Dynaboard"; api/models/score.py): one number
from a model's figures on several metrics, weighed by the user's weights, each metric
first made comparable to the perf metric by its average marginal rate of substitution
(AMRS) between the models.

For a table of models x metrics: each metric is turned by its direction (1, or -1 for
a metric where lower is better, such as memory) and offset (memory: the instance's
memory, so that using less scores more); the models are sorted by the perf metric; for
each adjacent pair whose perf differs by more than 0.0001 of the largest perf, a
metric's marginal rate is |its difference| / the perf's difference, and its AMRS is
the mean of those rates; each metric is divided by |AMRS|, and the Dynascore is the
sum of the metrics weighed by the weights normalised to sum 1. A metric whose AMRS is
0 (the same for every model) or cannot be computed (no pair of models far enough apart)
adds 0, where Dynabench's sum became NaN; the perf metric's rate is 1 (its AMRS against
itself, wherever Dynabench's is defined), so that models that tie on it (as they may on
a bootstrap resample) keep it.

Every function here takes a stack of tables (..., models, metrics), so that the
Dynascores of a thousand bootstrap resamples are computed in one pass.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

DELTA_CUTOFF = 0.0001
"""Pairs of models whose perf differs by less than this share of the largest perf are
left out of the AMRS: small differences would make it noise."""


def dynascores(values: np.ndarray, perf: int, weights: Sequence[float],
               directions: Sequence[float], offsets: Sequence[float],
               cutoff: float = DELTA_CUTOFF) -> np.ndarray:
    """The Dynascore of each model of each table: `values` is (..., models, metrics),
    `perf` the perf metric's column, `weights`, `directions` and `offsets` one a
    metric. The result is (..., models), in the tables' order of models."""
    return weighed(contributions(values, perf, directions, offsets, cutoff), weights)


def weighed(contributed: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Dynascores from the metrics' contributions (..., models, metrics): their sum
    weighed by the weights normalised to sum 1."""
    total = float(np.sum(weights))
    if total <= 0:
        raise ValueError("the weights must sum to more than 0")
    shares = np.asarray(weights, dtype=np.float64) / total
    found: np.ndarray = (contributed * shares).sum(axis=-1)
    return found


def contributions(values: np.ndarray, perf: int, directions: Sequence[float],
                  offsets: Sequence[float], cutoff: float = DELTA_CUTOFF) -> np.ndarray:
    """Each model's metrics made comparable, before the weights: each turned by its
    direction and offset and divided by its |AMRS| (0 where the AMRS is 0 or cannot be
    computed). A Dynascore is their sum weighed by the normalised weights, so that a
    page can rank the models again for any weights without the tables."""
    values = np.asarray(values, dtype=np.float64)
    converted = values * np.asarray(directions, np.float64) + np.asarray(offsets, np.float64)
    order = np.argsort(values[..., perf], axis=-1, kind="stable")  # by the raw perf
    ranked = np.take_along_axis(converted, order[..., None], axis=-2)
    delta = np.diff(ranked, axis=-2)  # each model against the one below it
    threshold = ranked[..., perf].max(axis=-1, keepdims=True) * cutoff
    kept = np.abs(delta[..., perf]) > threshold  # (..., models - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.abs(delta) / delta[..., perf][..., None]
        counted = kept.sum(axis=-1)[..., None]
        amrs = np.where(kept[..., None], rates, 0.0).sum(axis=-2) / counted
    usable = np.isfinite(amrs) & (amrs != 0)
    usable[..., perf] = True  # the perf metric's own rate is 1, even where models tie
    amrs[..., perf] = 1.0
    scale = np.where(usable, np.abs(np.where(usable, amrs, 1.0)), 1.0)
    found: np.ndarray = np.where(usable[..., None, :], converted / scale[..., None, :], 0.0)
    return found


def percentile_interval(values: np.ndarray) -> np.ndarray:
    """The 95% interval of resampled values (the last axis), as (..., 2): the values
    at the same places of the sorted resamples as corpus-score --confidence takes
    (sacrebleu's: the len // 40-th from each end)."""
    ordered = np.sort(values, axis=-1)
    lower = ordered.shape[-1] // 40
    upper = ordered.shape[-1] - lower - 1
    return np.stack([ordered[..., lower], ordered[..., upper]], axis=-1)
