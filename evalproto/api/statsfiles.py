"""Stats files: a system's rows written for `reduce`, shards merged and reduced as a
corpus is, and segment scores computed elsewhere (COMET, BLEURT, ...) imported as rows."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.api.scoring import Comparison
from evalproto.base.errors import EvalprotoError, InputError, UsageProblem
from evalproto.base.items import SegmentNumbers
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics import registry
from evalproto.readers.groups import read_groups
from evalproto.readers.scores import read_scores
from evalproto.readers.statsfiles import MetricColumns, merge_stats, read_stats
from evalproto.sources.pool import open_source
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import IN_PROCESS, MetricSpec
from evalproto.stats.reductions import Analysis, analyse
from evalproto.stats.resampling import checked_total
from evalproto.stats.table import StatsTable


def reduce_stats(paths: Sequence[str], evaluators: Sequence[str], analysis: Analysis,
                 partial: bool = False, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 groups: Optional[str] = None, progress: Progress = QUIET) -> Comparison:
    """Stats files merged and reduced as corpus-score reduces a corpus. A metric written
    by a command is run with the command the caller names (`evaluators`, in the files'
    order), never with the one written in the file: a stats file is data."""
    with ExitStack() as stack:
        tables = stats_tables(stack, paths, evaluators, partial, timeout, groups)
        analysis.check_systems(len(tables[0].systems))
        return Comparison(analyse(tables, analysis, progress), ids=tables[0].ids)


def stats_tables(stack: ExitStack, paths: Sequence[str], evaluators: Sequence[str],
                  partial: bool, timeout: Optional[float], groups: Optional[str],
                  mixed: bool = False) -> List[StatsTable]:
    """One table per metric of merged stats files, every row checked against the
    metric's rules. With `mixed`, files of different metrics may be given together, as
    long as each metric's files cover the same systems and segments."""
    files = [read_stats(path) for path in paths]
    batches: Dict[Tuple[MetricColumns, ...], List[Any]] = {}
    for stats_file in files:
        batches.setdefault(tuple(stats_file.metrics) if mixed else (), []).append(stats_file)
    merged = [(batch, merge_stats(batch, partial)) for batch in batches.values()]
    first = merged[0][1]
    for batch, other in merged[1:]:
        if set(other.systems) != set(first.systems) or other.ids != first.ids:
            raise InputError(
                f"{batch[0].path} and {files[0].path} hold other metrics for other systems "
                f"or segments ({', '.join(other.systems)} on {len(other.ids)} segments; "
                f"{', '.join(first.systems)} on {len(first.ids)}); a report compares the "
                f"same systems on the same segments under every metric")
    tags = read_groups(groups, first.ids, partial) if groups else None
    commands = iter(evaluators)
    tables = []
    for batch, stats in merged:
        for number, metric in enumerate(stats.metrics):
            spec = MetricSpec(metric.kind, _reduce_spec(metric, commands))
            source = open_source(spec, stack, timeout)
            if source.signature() != metric.signature:
                raise EvalprotoError(
                    f"the stats files were written with the signature {metric.signature!r}, "
                    f"but {spec.spec!r} here has {source.signature()!r}; their scores would "
                    f"not be comparable")
            for stats_file in batch:
                _check_rows(source, stats_file, number)
            for system in first.systems:  # an overflowing sum is said with its files
                files_of = ", ".join(part.path for part in batch if part.system == system)
                checked_total(stats.systems[system][number], metric.stat_names,
                              f"{files_of}: system {system!r}, {metric.spec}")
            tables.append(StatsTable(metric.spec, source, {
                system: stats.systems[system][number] for system in first.systems},
                first.ids, tags, nrefs=stats.nrefs))
    extra = list(commands)
    if extra:
        raise UsageProblem(f"`evaluators` names {extra[0]!r}, but the stats files hold no "
                           f"other metric written by a command")
    return tables


def _reduce_spec(metric: MetricColumns, commands: Iterator[str]) -> str:
    if metric.kind == IN_PROCESS:
        return metric.spec
    command = next(commands, None)
    if command is None:
        import shlex
        raise UsageProblem(
            f"the stats files were written by the evaluator command {metric.spec!r}. A stats "
            f"file is data, and evalproto runs no command named in data: to reduce them, "
            f"name the command yourself in `evaluators`: {shlex.quote(metric.spec)}")
    return command


def _check_rows(source: Any, stats_file: Any, number: int) -> None:
    """Refuse rows that the metric could not have written (a row with more matches than
    n-grams, a negative length): they would move the score without a word."""
    if not hasattr(source, "broken_rule"):
        return  # an external evaluator declares no rules
    broken = source.broken_rule(stats_file.rows[number])
    if broken is not None:
        row, rule = broken
        raise InputError(f"{stats_file.path}: line {stats_file.first_line + row}: these "
                         f"{stats_file.metrics[number].spec} statistics are impossible: "
                         f"they break {rule}")


# -- segment scores from elsewhere -----------------------------------------------------

def import_scores(path: str, metric: str, signature: str = "",
                  field: Optional[str] = None, lower_is_better: bool = False
                  ) -> Tuple[List[MetricColumns], Sequence[str], List[np.ndarray]]:
    """(the columns, the segment ids, the rows) of a stats file of segment scores
    computed elsewhere (see evalproto.readers.scores for the formats), under the `mean`
    metric named `metric`: rows of (score, score², 1), so that `reduce` and `report
    --stats` give intervals, paired tests and groups of the mean score."""
    if not metric.strip() or any(character in metric for character in "\t\n\r"):
        raise UsageProblem(f"`metric` must name the metric (e.g. COMET), got {metric!r}")
    scores = read_scores(path, field)
    words = ["mean", metric] + (["--signature", signature] if signature else []) + (
        ["--lower-is-better"] if lower_is_better else [])
    import shlex
    spec = shlex.join(words)
    evaluator = registry.from_spec(spec)
    values = np.array(scores.values, dtype=np.float64)
    with np.errstate(over="ignore"):
        rows = np.column_stack([values, values * values, np.ones_like(values)])
    broken = evaluator.broken_rule(rows)
    if broken is not None:
        raise InputError(f"{path}: line {scores.lines[broken[0]]}: the score "
                         f"{scores.values[broken[0]]!r} cannot be averaged: its square "
                         f"overflows")
    columns = [MetricColumns(spec, IN_PROCESS, evaluator.signature(), evaluator.stat_names,
                             evaluator.higher_is_better)]
    return columns, SegmentNumbers(len(values)), [rows]
