"""A leaderboard's figures from stats tables, and its text.

Every figure is one the project already computes: a model's score is corpus-score's,
its interval is corpus-score --confidence's (the same resamples and arithmetic), its
rank range comes from the clusters of the report's all-pairs paired bootstrap
(`metric_figures`), and a tag's score is the corpus score of the tag's segments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from evalproto.reports.report import ReportOptions, metric_figures
from evalproto.reports.results import escape
from evalproto.stats.reductions import Analysis, analyse
from evalproto.stats.resampling import DEFAULT_SEED, confidence_interval
from evalproto.stats.significance import SIGNIFICANCE_LEVEL, rank_ranges
from evalproto.stats.table import StatsTable

DONE = "done"
"""The status of a leaderboard entry that is scored."""


@dataclass
class Standing:
    """One system's place on a leaderboard under one metric."""

    system: str
    score: float
    n: int
    signature: str
    mean: float
    half_width: float
    rank: Tuple[int, int]
    tags: Dict[str, float]


def standings(table: StatsTable, samples: int = 1000,
              seed: Optional[int] = DEFAULT_SEED) -> List[Standing]:
    """Every system of `table` in ranking order: its corpus score, the 95% interval of
    `samples` bootstrap resamples as --confidence gives it, its rank range from the
    report's clusters, and the score of each tag of `table.groups`."""
    figures = metric_figures(table, ReportOptions(samples=samples, seed=seed))
    ranks = rank_ranges(figures.clusters)
    tags = tag_scores(table)
    results = {result.system: result for result in figures.results}
    found = []
    for system in (system for cluster in figures.clusters for system in cluster):
        result = results[system]
        assert result.resampled is not None  # samples >= 1
        mean, half_width = confidence_interval(result.resampled)
        found.append(Standing(system, result.score, result.n, result.signature, float(mean),
                              float(half_width), ranks[system], tags.get(system, {})))
    return found


def tag_scores(table: StatsTable) -> Dict[str, Dict[str, float]]:
    """{system: {tag: the corpus score of the tag's segments}}; none without groups."""
    if table.groups is None:
        return {}
    found: Dict[str, Dict[str, float]] = {system: {} for system in table.systems}
    for result in analyse([table], Analysis()):
        if result.group is not None:
            found[result.system][result.group] = result.score
    return found


# -- text --------------------------------------------------------------------------------

def format_leaderboard(board: Mapping[str, Any], width: int = 1) -> str:
    """A leaderboard as the evaluation service gives it (its JSON: the task, its
    metrics and perf metric, and each dataset's entries in ranking order), as text: a
    table per dataset, a row per model, a column per metric, then the per-tag scores
    of the perf metric and the signatures."""
    metrics = board["metrics"]
    names = {metric["metric"]: metric["name"] for metric in metrics}
    perf = board["perf"]
    lines: List[str] = []
    for dataset in board["datasets"]:
        if lines:
            lines.append("")
        round_text = f", round {dataset['round']}" if dataset.get("round") is not None else ""
        lines.append(f"{escape(board['task'])} / {escape(dataset['dataset'])}{round_text}: "
                     f"{dataset['n']} segments, ranked by {escape(names[perf])}")
        placed = board_models(dataset, perf)
        if not placed:
            lines.append("(no submissions yet)")
            continue
        models = [one.model for one in placed]
        cells = {(entry["model"], entry["metric"]): entry for entry in dataset["entries"]}
        rows = [["Rank", "Model", "Team", *(escape(names[m["metric"]]) for m in metrics)]]
        for one in placed:
            model = one.model
            rows.append([rank_text(one.rank) if one.rank else "-",
                         escape(model), escape(one.first["team"]),
                         *(_cell(cells.get((model, m["metric"])), m.get("decimals", width))
                           for m in metrics)])
        lines += _aligned(rows)
        lines += _tag_lines(dataset["entries"], models, perf, names[perf], width)
        failed = [entry for entry in dataset["entries"] if entry["status"] == "failed"]
        lines += [f"{escape(entry['model'])}, {escape(entry['metric'])}: failed: "
                  f"{escape(entry.get('message') or '')}" for entry in failed]
    # a signature holds the dataset's references' count: it may differ between datasets
    signatures: Dict[str, Dict[str, List[str]]] = {}
    for dataset in board["datasets"]:
        for entry in dataset["entries"]:
            if entry.get("signature"):
                found = signatures.setdefault(entry["metric"], {}).setdefault(
                    entry["signature"], [])
                if dataset["dataset"] not in found:
                    found.append(dataset["dataset"])
    if signatures:
        lines.append("")
        for metric, kinds in signatures.items():
            if len(kinds) == 1:
                lines.append(f"{escape(metric)}: {escape(next(iter(kinds)))}")
                continue
            lines += [f"{escape(metric)} on {escape(', '.join(datasets))}: {escape(signature)}"
                      for signature, datasets in kinds.items()]
        lines += ["±: half the width of the score's 95% bootstrap interval. Rank: the "
                  "places of the model's cluster",
                  f"by the ranking metric, models that the all-pairs paired bootstrap does "
                  f"not tell apart (p > {SIGNIFICANCE_LEVEL})."]
    return "\n".join(lines) + "\n"


def metric_names(metrics: Sequence[Mapping[str, Any]]) -> Dict[str, str]:
    """How each metric of a leaderboard (its JSON's "metrics") is headed: its score's
    name, or its spec where two share a name (as the report heads them)."""
    names = [metric["name"] for metric in metrics]
    return {metric["metric"]: metric["name"] if names.count(metric["name"]) == 1
            else metric["metric"] for metric in metrics}


@dataclass(frozen=True)
class BoardModel:
    """A model of a leaderboard's dataset section: its entry of the perf metric (else
    its first), its rank once it is ranked, and what its team says of it."""

    model: str
    first: Mapping[str, Any]
    rank: Optional[List[int]]  # [first, last]
    about: Mapping[str, Any]


def board_models(section: Mapping[str, Any], perf: str) -> List[BoardModel]:
    """Each model of a leaderboard's dataset section (its JSON), in the section's order."""
    entries = section["entries"]
    cells = {(entry["model"], entry["metric"]): entry for entry in entries}
    about = {record["model"]: record for record in section.get("models", [])}
    found = []
    for model in dict.fromkeys(entry["model"] for entry in entries):
        first = cells.get((model, perf)) or next(e for e in entries if e["model"] == model)
        ranked = first["status"] == DONE and first.get("rank") is not None
        found.append(BoardModel(model, first, first["rank"] if ranked else None,
                              about.get(model, {})))
    return found


def rank_text(rank: Sequence[int], dash: str = "-") -> str:
    """A rank range as a leaderboard shows it: "3", or "1-2" (pages use an en dash)."""
    return str(rank[0]) if rank[0] == rank[1] else f"{rank[0]}{dash}{rank[1]}"


def _fixed(value: Optional[float], places: int) -> str:
    return "nan" if value is None or not math.isfinite(value) else f"{value:.{places}f}"


def _cell(entry: Optional[Mapping[str, Any]], width: int) -> str:
    if entry is None:
        return "-"
    if entry["status"] != "done":
        return entry["status"]
    if entry.get("half_width") is None:  # measured once (throughput, memory): no interval
        return _fixed(entry["score"], width)
    return f"{_fixed(entry['score'], width)} ± {_fixed(entry['half_width'], width)}"


def _aligned(rows: List[List[str]], left: int = 3) -> List[str]:
    """Rows as columns: the first `left` aligned left, the figures right."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row[:left], widths[:left])),
                       *(cell.rjust(w) for cell, w in zip(row[left:], widths[left:]))]).rstrip()
            for row in rows]


def _tag_lines(entries: Sequence[Mapping[str, Any]], models: Sequence[str], perf: str,
               name: str, width: int) -> List[str]:
    """The perf metric's score of each tag, a row per model."""
    scored = {entry["model"]: entry["tags"] for entry in entries
              if entry["metric"] == perf and entry["status"] == "done"}
    tags = list(dict.fromkeys(tag for found in scored.values() for tag in found))
    if not tags:
        return []
    rows = [["Model", *map(escape, tags)]]
    rows += [[escape(model), *(_fixed(scored[model].get(tag), width) if model in scored
                               else "-" for tag in tags)] for model in models]
    return ["", f"{escape(name)} by tag:", *_aligned(rows, left=1)]


def format_dynaboard(board: Mapping[str, Any], width: int = 1) -> str:
    """A Dynaboard as the evaluation service gives it, as text: a row per model by
    Dynascore, with its interval and its figures, the weights, what was left out."""
    metrics = [metric["metric"] for metric in board["metrics"]]
    weights = ", ".join(f"{escape(metric['metric'])} {metric['weight']:g}"
                        for metric in board["metrics"])
    lines = [f"{escape(board['task'])} / {escape(board['dataset'])}: the Dynascore of "
             f"{len(board['models'])} models (weights: {weights}; 95% bootstrap intervals "
             f"of {board['samples']} resamples)"]
    rows = [["Rank", "Model", "Team", "Dynascore (95% CI)", *map(escape, metrics)]]
    for model in board["models"]:
        low, high = model["interval"]
        rows.append([str(model["rank"]), escape(model["model"]), escape(model["team"]),
                     f"{_fixed(model['dynascore'], width)} ({_fixed(low, width)}-"
                     f"{_fixed(high, width)})",
                     *(_fixed(model["scores"][metric], 3 if metric == "memory" else width)
                       for metric in metrics)])
    lines += _aligned(rows)
    for left in board["left_out"]:
        lines.append(f"Left out: {escape(left['model'])} ({escape(left['team'])}), without "
                     f"{escape(', '.join(left['without']))}.")
    return "\n".join(lines) + "\n"
