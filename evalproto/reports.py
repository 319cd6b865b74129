"""Writing results for people (text tables) and for programs (JSON Lines, TSV)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from evalproto.protocol import format_numbers, json_number
from evalproto.scoring import MetricTable, Result

FORMATS = ("text", "json", "tsv")
SIGNIFICANCE_LEVEL = 0.05


def result_record(result: Result) -> Dict[str, Any]:
    record: Dict[str, Any] = {"system": result.system, "metric": result.metric}
    if result.group is not None:
        record["group"] = result.group
    record.update({
        "score": result.score,
        "signature": result.signature,
        "n": result.n,
        "stats": [json_number(value) for value in result.stats],
        "stat_names": list(result.stat_names),
        "higher_is_better": result.higher_is_better,
    })
    if result.mean is not None:
        record.update(mean=result.mean, ci=result.ci)
    if result.p_value is not None:
        record["p_value"] = result.p_value
    if result.baseline:
        record["baseline"] = True
    return record


def format_json(results: Sequence[Result]) -> str:
    """JSON Lines: one object per (system, metric), and per group when there are groups."""
    return "".join(json.dumps(result_record(result), ensure_ascii=False) + "\n"
                   for result in results)


def format_tsv(results: Sequence[Result]) -> str:
    columns = ["system", "group", "metric", "score", "mean", "ci", "p_value", "n",
               "signature", "stats"]

    def cell(value: Optional[float]) -> str:
        return "" if value is None else repr(value)

    lines = ["\t".join(columns)]
    for r in results:
        lines.append("\t".join([r.system, r.group or "", r.metric, repr(r.score), cell(r.mean),
                                cell(r.ci), cell(r.p_value), str(r.n), r.signature,
                                format_numbers(r.stats)]))
    return "\n".join(lines) + "\n"


def _cell(result: Result, width: int) -> str:
    text = f"{result.score:.{width}f}"
    if result.mean is not None:
        text += f" ({result.mean:.{width}f} ± {result.ci:.{width}f})"
    if result.p_value is not None:
        marker = "*" if result.p_value <= SIGNIFICANCE_LEVEL else ""
        text += f" (p = {result.p_value:.4f}){marker}"
    return text


def _table(results: Sequence[Result], width: int) -> List[str]:
    metrics = list(dict.fromkeys(r.metric for r in results))
    systems = list(dict.fromkeys(r.system for r in results))
    with_ci = {r.metric for r in results if r.mean is not None}
    header = ["System", *(f"{m} (μ ± 95% CI)" if m in with_ci else m for m in metrics)]
    baselines = {r.system for r in results if r.baseline}
    cells = {(r.system, r.metric): _cell(r, width) for r in results}
    table = [header] + [[f"Baseline: {s}" if s in baselines else s,
                         *(cells[s, m] for m in metrics)] for s in systems]
    widths = [max(len(row[column]) for row in table) for column in range(len(header))]
    return ["  ".join([row[0].ljust(widths[0]),
                       *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:]))]).rstrip()
            for row in table]


def format_text(results: Sequence[Result], width: int = 1) -> str:
    """Systems as rows and metrics as columns, one table per group, then signatures."""
    lines: List[str] = []
    for group in dict.fromkeys(r.group for r in results):
        if group is not None:
            lines += ["", f"Group: {group}"]
        lines += _table([r for r in results if r.group == group], width)
    lines.append("")
    signatures = {r.metric: r.signature for r in results}
    lines += [f"{metric}: {signature}" for metric, signature in signatures.items()]
    if any(r.p_value is not None for r in results):
        lines.append(f"*: p <= {SIGNIFICANCE_LEVEL}, significantly different from the baseline")
    return "\n".join(lines) + "\n"


def format_segments(tables: Sequence[MetricTable], ids: Sequence[str], output_format: str,
                    width: int = 1) -> str:
    """Each segment's own score, for every system and metric (sacrebleu's -sl)."""
    scores = {(table.label, system): table.source.score_many(rows)
              for table in tables for system, rows in table.rows.items()}
    systems = list(tables[0].rows)
    labels = [table.label for table in tables]
    if output_format == "json":
        return "".join(
            json.dumps({"system": system, "metric": label, "segment": segment,
                        "score": float(scores[label, system][i])}, ensure_ascii=False) + "\n"
            for i, segment in enumerate(ids) for system in systems for label in labels)
    if output_format == "tsv":
        return "segment\tsystem\tmetric\tscore\n" + "".join(
            f"{segment}\t{system}\t{label}\t{float(scores[label, system][i])!r}\n"
            for i, segment in enumerate(ids) for system in systems for label in labels)
    lines = ["\t".join(["Segment", "System", *labels])]
    lines += ["\t".join([segment, system, *(f"{scores[label, system][i]:.{width}f}"
                                            for label in labels)])
              for i, segment in enumerate(ids) for system in systems]
    return "\n".join(lines) + "\n"


def format_results(results: Sequence[Result], output_format: str, width: int = 1) -> str:
    if output_format == "json":
        return format_json(results)
    if output_format == "tsv":
        return format_tsv(results)
    return format_text(results, width)
