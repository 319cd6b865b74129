"""A meta-evaluation's results for people and programs: a text table, JSON Lines (one
object per metric) and a LaTeX table (booktabs)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from evalproto.base.numerals import plain_data, to_json
from evalproto.reports.latex import latex_escape
from evalproto.reports.results import escape

FORMATS = ("text", "json", "latex")
"""The output formats of meta-eval (-f)."""

DECIMALS = 4


@dataclass
class MetricAgreement:
    """One metric's agreement with the human judgements: its `value` under
    `statistic` averaged by `average_by`; for tie calibration, the `epsilon` it chose;
    with a permutation test, `p_values` ({other metric: the p-value for this metric
    agreeing better}), its `rank` range (first and last place of its cluster; 1 is the
    best) and `cluster` (mt-metrics-eval's rank number)."""

    metric: str
    statistic: str
    average_by: str
    value: float
    epsilon: Optional[float] = None
    p_values: Optional[Dict[str, float]] = None
    rank: Optional[Tuple[int, int]] = None
    cluster: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object of this metric: metric, statistic, average_by, value, and
        where there are, epsilon, p_values, rank and cluster."""
        record: Dict[str, Any] = {"metric": self.metric, "statistic": self.statistic,
                                  "average_by": self.average_by, "value": self.value}
        for key in ("epsilon", "p_values", "rank", "cluster"):
            if getattr(self, key) is not None:
                record[key] = getattr(self, key)
        return plain_data(record)


@dataclass
class MetaEvaluation:
    """How well each metric agrees with the human judgements, best first (mt-metrics-
    eval's order: by value, then name). `human` names the judgements, `systems` x
    `items` their table and `judged` its cells with a human score (for Open-Assistant's
    `replies`: places among siblings x prompts); `resamples` and `seed` are the
    permutation test's (0: none)."""

    results: List[MetricAgreement]
    human: str
    systems: int
    items: int
    judged: int
    replies: bool = False
    resamples: int = 0
    seed: Optional[int] = None
    level: float = 0.05
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> List[Dict[str, Any]]:
        """One JSON object per metric (MetricAgreement.to_dict), best first."""
        return [result.to_dict() for result in self.results]

    def __getitem__(self, metric: str) -> MetricAgreement:
        for result in self.results:
            if result.metric == metric:
                return result
        raise KeyError(metric)

    def __str__(self) -> str:
        return format_text(self)


def _count(count: int, noun: str) -> str:
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun[:-1]}ies" if noun.endswith("y") else f"{count} {noun}s"


def _fixed(value: Optional[float], decimals: int = DECIMALS) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.{decimals}f}"


def _places(rank: Optional[Tuple[int, int]]) -> str:
    if rank is None:
        return ""
    return str(rank[0]) if rank[0] == rank[1] else f"{rank[0]}-{rank[1]}"


@dataclass
class _Table:
    """The cells of the table, unescaped: each metric's name, value, epsilon (where
    calibrated) and rank (where tested), then its p-value against each metric (None
    against itself)."""

    head: List[str]
    rows: List[Tuple[str, List[str], List[Optional[float]]]]
    tested: bool


def _table(evaluation: MetaEvaluation) -> _Table:
    results = evaluation.results
    calibrated = any(result.epsilon is not None for result in results)
    tested = any(result.p_values is not None for result in results)
    head = [results[0].statistic if results else "value"]
    head += ["epsilon"] if calibrated else []
    head += ["rank"] if tested else []
    rows = []
    for result in results:
        cells = [_fixed(result.value)]
        if calibrated:
            cells.append("-" if result.epsilon is None else f"{result.epsilon:.6g}")
        if tested:
            cells.append(_places(result.rank))
        p_values = [None if other.metric == result.metric else
                    (result.p_values or {}).get(other.metric) for other in results]
        rows.append((result.metric, cells, p_values if tested else []))
    return _Table(head, rows, tested)


def format_text(evaluation: MetaEvaluation) -> str:
    """A table of the metrics, best first, under lines that say what was measured."""
    results = evaluation.results
    if evaluation.replies:
        shape = (f"{_count(evaluation.judged, 'judged reply')} to "
                 f"{_count(evaluation.items, 'message')}, at most {evaluation.systems} to one")
    else:
        shape = (f"{_count(evaluation.systems, 'system')} x {_count(evaluation.items, 'item')}, "
                 f"{evaluation.judged} judged")
    lines = [f"Human judgements: {escape(evaluation.human)} ({shape})"]
    if results:
        lines.append(f"Statistic: {results[0].statistic}, averaged by {results[0].average_by}")
    lines.append("")
    table = _table(evaluation)
    rows = [["metric", *table.head,
             *(f"p >{escape(name)}" for name, _, _ in table.rows if table.tested)]]
    rows += [[escape(name), *cells, *("" if p is None and i == j else _fixed(p)
                                       for j, p in enumerate(p_values))]
             for i, (name, cells, p_values) in enumerate(table.rows)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines += ["  ".join([row[0].ljust(widths[0]),
                         *(cell.rjust(width) for cell, width in zip(row[1:], widths[1:]))]
                        ).rstrip() for row in rows]
    if evaluation.resamples:
        lines += ["", f"PERM-BOTH, {evaluation.resamples} resamples (fewer where mt-metrics-"
                      f"eval's early stop ended a test), seed {evaluation.seed}: p >M is the "
                      f"p-value for the row's metric agreeing better than M. Rank: the places "
                      f"of the metric's cluster (a metric that one of the cluster beats with "
                      f"p <= {evaluation.level} starts the next; mt-metrics-eval's "
                      f"AssignRanks)."]
    return "\n".join(lines + evaluation.notes) + "\n"


def format_json(evaluation: MetaEvaluation) -> str:
    """JSON Lines: one object per metric, best first."""
    return "".join(to_json(record) + "\n" for record in evaluation.to_dict())


def format_latex(evaluation: MetaEvaluation) -> str:
    """A booktabs table of the metrics, best first; a p-value <= the level in bold."""
    table = _table(evaluation)
    names = [name for name, _, _ in table.rows]
    columns = len(table.head) + (len(names) if table.tested else 0)
    head = ["Metric", *(latex_escape(cell) for cell in table.head),
            *(rf"$p >$ {latex_escape(name)}" for name in names if table.tested)]
    lines = [f"% evalproto meta-eval: {len(names)} metrics; needs \\usepackage{{booktabs}}",
             r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * columns + "}",
             r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for name, cells, p_values in table.rows:
        shown = [latex_escape(name), *(latex_escape(cell) for cell in cells)]
        for p_value in p_values:
            text = "--" if p_value is None else _fixed(p_value)
            significant = p_value is not None and p_value <= evaluation.level
            shown.append(rf"\textbf{{{text}}}" if significant else text)
        lines.append(" & ".join(shown) + r" \\")
    statistic, average_by = ((evaluation.results[0].statistic, evaluation.results[0].average_by)
                             if evaluation.results else ("", ""))
    caption = (f"Agreement with the human judgements of {latex_escape(evaluation.human)}: "
               f"{latex_escape(statistic)}, averaged by {average_by}.")
    if table.tested:
        caption += (f" PERM-BOTH, {evaluation.resamples} resamples: $p >$ M is the p-value "
                    f"for the row's metric agreeing better than M ($p \\le {evaluation.level}$ "
                    f"in bold); rank: the places of the metric's cluster.")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def format_meta_evaluation(evaluation: MetaEvaluation, output_format: str = "text") -> str:
    """The results as text, JSON Lines or LaTeX (`output_format`)."""
    if output_format == "json":
        return format_json(evaluation)
    if output_format == "latex":
        return format_latex(evaluation)
    if output_format == "text":
        return format_text(evaluation)
    raise ValueError(f"output_format must be one of {', '.join(FORMATS)}, not {output_format!r}")
