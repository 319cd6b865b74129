"""The Dynascore (evalproto.stats.dynascore) for Python users, and the Dynaboard the
evaluation service shows: each model's Dynascore with its 95% bootstrap interval,
which Dynabench never gave ("dynavariance": 0, TODO). The interval comes from the
stored rows: the original dataset's segments are resampled (each with its perturbed
copies) jointly across the models, the perf metric and the delta metrics (fairness,
robustness) are computed again on each resample, throughput and memory are held, and
the Dynascore of each resample is taken; the interval is the middle 95% of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from evalproto.api.board import _loaded
from evalproto.sources.specs import MetricSpec
from evalproto.stats.dynascore import (
    contributions,
    dynascores,
    percentile_interval,
    weighed,
)
from evalproto.stats.resampling import DEFAULT_SEED, resampled_figures, resampled_sums
from evalproto.stats.table import MAIN, figures_of

PERF_WEIGHT = 4.0
OTHER_WEIGHT = 1.0
"""Dynabench's default weights: the perf metric 4, every other metric 1."""
INSTANCE_MEMORY = 16.0
"""Memory's offset, in GiB: the memory of the instance a model runs on (Dynabench's
default), so that a model using less of it scores more."""


def default_weights(perf: str, metrics: Sequence[str]) -> Dict[str, float]:
    """Dynabench's weights for these metrics: the perf metric 4, the others 1."""
    return {metric: PERF_WEIGHT if metric == perf else OTHER_WEIGHT for metric in metrics}


def dynascore(scores: Mapping[str, Mapping[str, float]], weights: Mapping[str, float],
              perf: str, directions: Optional[Mapping[str, float]] = None,
              offsets: Optional[Mapping[str, float]] = None) -> Dict[str, float]:
    """Each model's Dynascore, as Dynabench computes it. `scores` holds each model's
    figure on each metric ({model: {metric: value}}; every model has every metric),
    `weights` each metric's weight (normalised to sum 1; a metric without one weighs
    0), `perf` the metric that orders the models, `directions` -1 for a metric where
    lower is better (1 by default) and `offsets` what is added after (0 by default):
    Dynabench's memory is direction -1, offset 16 (GiB, the instance's memory).

    >>> scores = {"A": {"acc": 80, "memory": 4}, "B": {"acc": 85, "memory": 8},
    ...           "C": {"acc": 90, "memory": 12}}
    >>> dynascore(scores, {"acc": 4, "memory": 1}, "acc", {"memory": -1}, {"memory": 16})
    {'A': 67.0, 'B': 70.0, 'C': 73.0}
    """
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must map each model to its {metric: value}")
    models = list(scores)
    metrics = list(scores[models[0]])
    if perf not in metrics:
        raise ValueError(f"the perf metric {perf!r} is not among the scores' metrics "
                         f"({', '.join(metrics)})")
    for model in models:
        if set(scores[model]) != set(metrics):
            raise ValueError(f"model {model!r} has the metrics {sorted(scores[model])}, "
                             f"others {sorted(metrics)}: every model needs every metric")
    unknown = sorted(set(weights) - set(metrics))
    if unknown:
        raise ValueError(f"a weight for {unknown[0]!r}, which is not among the metrics "
                         f"({', '.join(metrics)})")
    values = np.array([[float(scores[model][metric]) for metric in metrics]
                       for model in models])
    found = dynascores(values, metrics.index(perf),
                       [float(weights.get(metric, 0.0)) for metric in metrics],
                       [float((directions or {}).get(metric, 1.0)) for metric in metrics],
                       [float((offsets or {}).get(metric, 0.0)) for metric in metrics])
    return {model: float(value) for model, value in zip(models, found)}


@dataclass
class BoardInputs:
    """What a Dynaboard is computed from, per model (in one order): the perf metric's
    stored rows on the original dataset; for each delta metric, its (delta, has copies)
    rows (evalproto.api.board.delta_rows); each measured metric's value."""

    perf: MetricSpec
    perf_name: str
    models: List[str]
    perf_rows: List[np.ndarray]
    perf_scores: List[float]
    deltas: Dict[str, List[np.ndarray]] = field(default_factory=dict)
    measured: Dict[str, List[float]] = field(default_factory=dict)


@dataclass
class BoardLine:
    """A model's line of a Dynaboard."""

    model: str
    dynascore: float
    interval: List[float]
    scores: Dict[str, float]
    normalized: Dict[str, float]  # each metric's share before the weights (contributions)


@dataclass
class Resampled:
    """A Dynaboard's figures before any weights: each model's figure on each metric
    (`point`, models × metrics) and on each resample (`resampled`, resamples × models
    × metrics). Weighing them is cheap; resampling is not, so a server keeps these and
    weighs them as each user asks."""

    models: List[str]
    metrics: List[str]
    point: np.ndarray
    resampled: np.ndarray


def resample_board(inputs: BoardInputs, samples: int = 1000,
                   seed: Optional[int] = DEFAULT_SEED) -> Resampled:
    """The figures of `samples` resamples of the original dataset's segments (with
    their copies), drawn alike for every model with the leaderboard's seed (so the perf
    metric's resamples are its interval's): the perf and delta metrics computed again
    on each, throughput and memory held."""
    return board_of_columns(
        inputs.models, inputs.perf_name, inputs.perf_scores,
        perf_columns(inputs.perf, inputs.perf_rows, samples, seed),
        {name: (rows, delta_columns(rows, samples, seed))
         for name, rows in inputs.deltas.items()},
        inputs.measured, samples)


def board_of_columns(models: Sequence[str], perf_name: str, perf_scores: Sequence[float],
                     perf_resampled: Sequence[np.ndarray],
                     deltas: Mapping[str, Tuple[Sequence[np.ndarray], Sequence[np.ndarray]]],
                     measured: Mapping[str, Sequence[float]], samples: int) -> Resampled:
    """A board's figures (perf, then the delta metrics, then the measured ones) from the
    perf metric's scores and resampled columns, each delta metric's rows and resampled
    columns (one a model), and the measured values, held on every resample."""
    return assembled(
        models, [perf_name, *deltas, *measured],
        [perf_scores, *[[mean_delta(rows) for rows in delta_rows]
                        for delta_rows, _ in deltas.values()], *measured.values()],
        [perf_resampled, *[columns for _, columns in deltas.values()],
         *[[np.full(samples, float(value)) for value in values]
           for values in measured.values()]])


def perf_columns(spec: MetricSpec, rows: Sequence[np.ndarray], samples: int,
                 seed: Optional[int]) -> List[np.ndarray]:
    """Each model's perf figure on each resample. The draws depend on the segments,
    the samples and the seed alone, so a model's column is the same whichever models
    it is computed with: a server computes each once."""
    metric = _loaded(spec)
    figures = resampled_figures(rows, figures_of(metric.source), samples, seed,
                                getattr(metric.source, "resample_dtype", np.float64))
    return [np.asarray(found[MAIN], dtype=np.float64) for found in figures]


def delta_columns(rows: Sequence[np.ndarray], samples: int,
                  seed: Optional[int]) -> List[np.ndarray]:
    """Each model's delta metric (its (delta, has copies) rows) on each resample: 0 on
    a resample that drew no example with copies."""
    parts: List[List[np.ndarray]] = [[] for _ in rows]
    for sums in resampled_sums(rows, samples, seed):
        for part, total in zip(parts, sums):
            with np.errstate(invalid="ignore", divide="ignore"):
                part.append(total[:, 0] / total[:, 1])
    return [np.nan_to_num(np.concatenate(part), nan=0.0) for part in parts]


def assembled(models: Sequence[str], metrics: Sequence[str],
              point: Sequence[Sequence[float]],
              columns: Sequence[Sequence[np.ndarray]]) -> Resampled:
    """A board's figures from each metric's point values and resampled columns (one a
    model, in the models' order)."""
    resampled = np.stack([np.stack(list(per_model), axis=-1) for per_model in columns],
                         axis=-1)  # (samples, models, metrics)
    return Resampled(list(models), list(metrics),
                     np.column_stack(list(point)).astype(np.float64), resampled)


@dataclass
class Converted:
    """A board's figures made comparable (each metric's contribution, evalproto.stats.
    dynascore.contributions) at its point and on each resample: all that weighing
    needs, so that a reader's weights cost two weighed sums."""

    models: List[str]
    metrics: List[str]
    point: np.ndarray
    point_shares: np.ndarray  # (models, metrics)
    resampled_shares: np.ndarray  # (samples, models, metrics)


def convert(board: Resampled, directions: Mapping[str, float],
            offsets: Mapping[str, float]) -> Converted:
    """The board's contributions, by each metric's direction and offset."""
    arguments = ([float(directions.get(metric, 1.0)) for metric in board.metrics],
                 [float(offsets.get(metric, 0.0)) for metric in board.metrics])
    return Converted(board.models, board.metrics, board.point,
                     contributions(board.point, 0, *arguments),
                     contributions(board.resampled, 0, *arguments))


def weigh(board: Converted, weights: Mapping[str, float]) -> List[BoardLine]:
    """Each model's Dynascore under these weights and its 95% interval (the middle 95%
    of the resamples' Dynascores), best first (ties: as given)."""
    chosen = [float(weights.get(metric, 0.0)) for metric in board.metrics]
    scores = weighed(board.point_shares, chosen)
    intervals = percentile_interval(weighed(board.resampled_shares, chosen).T)
    lines = [BoardLine(model, float(score), [float(low), float(high)],
                       {name: float(value) for name, value in zip(board.metrics, row)},
                       {name: float(value) for name, value in zip(board.metrics, normal)})
             for model, score, (low, high), row, normal
             in zip(board.models, scores, intervals, board.point, board.point_shares)]
    return sorted(lines, key=lambda line: -line.dynascore)


def dynaboard_of(inputs: BoardInputs, weights: Mapping[str, float],
                 directions: Mapping[str, float], offsets: Mapping[str, float],
                 samples: int = 1000, seed: Optional[int] = DEFAULT_SEED) -> List[BoardLine]:
    """Each model's Dynascore and its 95% bootstrap interval (resample_board, then
    weigh), best first."""
    return weigh(convert(resample_board(inputs, samples, seed), directions, offsets), weights)


def mean_delta(rows: np.ndarray) -> float:
    """A delta metric: the mean delta over the examples that have copies (0 if none
    has; see evalproto.api.board.delta_rows)."""
    counted = rows[:, 1].sum()
    return float(rows[:, 0].sum() / counted) if counted else 0.0
