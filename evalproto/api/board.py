"""What the evaluation service (evalproto.service) computes, as functions over uploads and
stored rows: a Dynabench dataset and its predictions read from bytes as corpus-score
reads them from files, one metric's rows for a submission, rows to and from the bytes
a database keeps, a leaderboard's standings and the stats files of an export.

The service keeps files and rows; every number comes from here, so a leaderboard's
figures are corpus-score's.
"""

from __future__ import annotations

import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from evalproto.api.scoring import Metric, corpus_tables
from evalproto.base.errors import EvalprotoError
from evalproto.base.progress import QUIET
from evalproto.readers.datasets import read_copies, read_dynabench, read_inputs, read_predictions
from evalproto.readers.statsfiles import MetricColumns
from evalproto.readers.text import Corpus
from evalproto.reports.leaderboard import Standing, format_leaderboard, standings
from evalproto.reports.statsfiles import check_ids, format_stats
from evalproto.sources.models import run_model
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import MetricSpec
from evalproto.stats.resampling import DEFAULT_SEED
from evalproto.stats.table import MAIN, StatsTable, figures_of

__all__ = ["Ran", "Scored", "Standing", "delta_rows", "describe_metric",
           "format_leaderboard", "leaderboard", "read_upload", "report_page",
           "rows_from_bytes", "rows_to_bytes", "run_on_dataset", "score_predictions",
           "standings_of", "stats_file_text"]

ROW_TYPE = np.dtype("<f8")
"""Stored rows are float64, little-endian, row after row: the rows themselves, bit for
bit, on any machine."""


def read_upload(dataset: Tuple[str, bytes],
                predictions: Optional[Tuple[str, bytes]] = None) -> Corpus:
    """A Dynabench dataset (`(name, its bytes)`), and the predictions of one system for
    it, read and checked as `corpus-score --data-format dynabench` reads the files: an
    error is an InputError that names the upload (by `name`) and the line or id."""
    contents = dict([dataset, *([predictions] if predictions else [])])
    if predictions is not None and predictions[0] == dataset[0]:
        raise ValueError("a dataset and its predictions need different names")
    return read_dynabench(dataset[0], [predictions[0]] if predictions else [],
                          contents=contents)


@dataclass
class Scored:
    """One metric's rows of one submission, with the signature they were scored under,
    the corpus score, and what the metric warned of (text that looks tokenized, ...)."""

    rows: np.ndarray
    signature: str
    score: float
    warnings: List[str] = field(default_factory=list)


_LOADED: Dict[MetricSpec, Metric] = {}
"""This process's metrics, built on first use (a worker scores many jobs)."""


def _loaded(spec: MetricSpec) -> Metric:
    if spec not in _LOADED:
        _LOADED[spec] = Metric(spec)
    return _LOADED[spec]


def score_predictions(spec: MetricSpec, dataset: Tuple[str, bytes],
                      predictions: Tuple[str, bytes],
                      timeout: Optional[float] = DEFAULT_TIMEOUT) -> Scored:
    """The rows of a system's predictions on a dataset (both `(name, bytes)`) under one
    metric, as corpus-score computes them on the same files. An evaluator command is
    started for the call and stopped after it."""
    corpus = read_upload(dataset, predictions)
    with ExitStack() as stack, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if spec.in_process:
            metric = _loaded(spec)
        else:
            metric = stack.enter_context(Metric(spec, timeout=timeout))
        (table,) = corpus_tables(stack, corpus, [metric], 1, timeout, QUIET)
        rows = table.rows[predictions[0]]
        return Scored(np.ascontiguousarray(rows, dtype=np.float64), metric.signature,
                      table.score(predictions[0]), [str(w.message) for w in caught])


@dataclass(frozen=True)
class Ran:
    """A model's run on a dataset: its predictions file (a reply a line: "id", "pred"
    and the output keys), and what was measured."""

    predictions: bytes
    examples: int
    throughput: float  # examples per second
    memory: float  # GiB, the peak of the model's process tree


def run_on_dataset(command: str, dataset: Tuple[str, bytes], input_keys: Sequence[str],
                   output_keys: Sequence[str], timeout: Optional[float]) -> Ran:
    """Run a model (a program: evalproto.sources.models) on every example of a
    Dynabench dataset, `(name, its bytes)`, giving it the examples' ids and input keys;
    a worker process of the service runs it. A bad reply is a ModelError that names
    the example and the key."""
    examples = read_inputs(dataset[0], input_keys, dict([dataset]))
    run = run_model(command, examples, output_keys, timeout)
    return Ran(run.predictions_jsonl(), len(examples), run.throughput, run.memory_gib)


def delta_rows(spec: MetricSpec, original: Tuple[str, bytes],
               original_predictions: Tuple[str, bytes], copy: Tuple[str, bytes],
               copy_predictions: Tuple[str, bytes]) -> np.ndarray:
    """What a model's predictions on a perturbed copy of a dataset say of its
    robustness (or fairness), per example of the original (Dynabench's delta metrics):
    for each example, (its delta, 1) if it has copies, else (0, 0); its delta is the
    perf metric of the model's predictions on its copies against the model's own
    prediction on the example (the copies' corpus score, in percent for a rate). The
    mean of the deltas is the metric; a bootstrap resamples the rows. Every file is
    `(name, bytes)`, read as corpus-score reads it."""
    corpus = read_upload(original, original_predictions)
    ids = list(corpus.ids)
    said = dict(zip(ids, next(iter(corpus.systems.values()))))
    copies = read_copies(copy[0], ids, dict([copy]))
    predicted = read_predictions(copy_predictions[0], [key for key, _ in copies], "pred",
                                 dict([copy_predictions]))
    metric = _loaded(spec)
    found = np.zeros((len(ids), 2))
    if copies:
        table = metric.stats_table(predicted, [[said[original]] for _, original in copies])
        where = {key: number for number, key in enumerate(ids)}
        index = np.array([where[original] for _, original in copies])
        sums = np.zeros((len(ids), table.rows["system"].shape[1]))
        np.add.at(sums, index, np.asarray(table.rows["system"], dtype=np.float64))
        has = np.bincount(index, minlength=len(ids)) > 0
        found[has, 0] = np.asarray(figures_of(metric.source)(sums[has])[MAIN])
        found[has, 1] = 1.0
    return found


def rows_to_bytes(rows: np.ndarray) -> bytes:
    """Rows as a database keeps them (see ROW_TYPE)."""
    return np.ascontiguousarray(rows, dtype=ROW_TYPE).tobytes()


def rows_from_bytes(data: bytes, segments: int) -> np.ndarray:
    """Stored rows back as a (segments, stats) float64 array."""
    rows = np.frombuffer(data, dtype=ROW_TYPE)
    if segments <= 0 or rows.size % segments:
        raise ValueError(f"{rows.size} stored numbers do not make {segments} rows")
    return rows.reshape(segments, rows.size // segments).astype(np.float64, copy=False)


def leaderboard(metric: Metric, rows: Mapping[str, np.ndarray], ids: Sequence[str],
                tags: Optional[List[List[str]]], nrefs: int | str, samples: int = 1000,
                seed: Optional[int] = DEFAULT_SEED) -> List[Standing]:
    """The standings of systems' stored rows on one dataset under one metric (see
    reports.leaderboard.standings); `tags` are the dataset's, each segment's list."""
    table = StatsTable(metric.label, metric.source, dict(rows), ids,
                       tags if tags and any(tags) else None, nrefs=nrefs)
    return standings(table, samples, seed)


def standings_of(spec: MetricSpec, rows: Mapping[str, np.ndarray], ids: Sequence[str],
                 tags: Optional[List[List[str]]], nrefs: int | str, samples: int = 1000,
                 seed: Optional[int] = DEFAULT_SEED) -> List[Standing]:
    """`leaderboard` for a metric named by its spec, loaded once per process: what a
    worker process computing a service's leaderboards runs. An evaluator command that
    failed is not used again."""
    try:
        return leaderboard(_loaded(spec), rows, ids, tags, nrefs, samples, seed)
    except EvalprotoError:
        broken = _LOADED.pop(spec, None)
        if broken is not None:
            broken.close()
        raise


def report_page(specs: Sequence[MetricSpec], rows: Sequence[Mapping[str, np.ndarray]],
                ids: Sequence[str], tags: Optional[List[List[str]]], nrefs: int | str,
                samples: int = 1000, seed: Optional[int] = DEFAULT_SEED) -> Tuple[str, str]:
    """The `evalproto report` page of systems' stored rows on one dataset, and its
    Content Security Policy: `rows` holds each metric's {system: rows}, the systems in
    the same order (the first is the report's baseline), and the dataset's tags are its
    groups. It is the page `report --stats` makes of an export's stats files with the
    tags as --groups; a worker process runs it (metrics loaded once per process)."""
    from evalproto.reports.html import content_security_policy, format_html
    from evalproto.reports.report import ReportOptions, build_report, check_tags

    grouped = tags if tags and any(tags) else None
    if grouped is not None:
        check_tags(grouped, "the dataset's tags")
    tables = [StatsTable(_loaded(spec).label, _loaded(spec).source, dict(arrays), ids,
                         grouped, nrefs=nrefs) for spec, arrays in zip(specs, rows)]
    report = build_report(tables, ReportOptions(samples=samples, seed=seed))
    return format_html(report), content_security_policy()


def stats_file_text(system: str, nrefs: int | str, metrics: Sequence[Metric],
                    ids: Sequence[str], rows: Sequence[np.ndarray]) -> str:
    """A stats file of one system's stored rows under `metrics`, as `evalproto stats`
    writes one: `reduce` and `report --stats` read it."""
    check_ids(ids)
    columns = [MetricColumns(metric.label, str(metric.metric_spec.kind), metric.signature,
                             metric.stat_names, metric.higher_is_better)
               for metric in metrics]
    return format_stats(system, nrefs, columns, ids, list(rows))


def describe_metric(metric: Metric) -> Dict[str, object]:
    """What a service says of a metric: its spec and kind, the score's name, the
    direction and the signature."""
    return {"metric": metric.label, "kind": str(metric.metric_spec.kind),
            "name": metric.name,
            "higher_is_better": metric.higher_is_better, "signature": metric.signature}

