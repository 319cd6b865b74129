"""Writing results for people (a text table) and for programs (JSON Lines, TSV)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

from evalproto.protocol import format_numbers
from evalproto.scoring import Result

FORMATS = ("text", "json", "tsv")


def _plain(value: float) -> int | float:
    """Integral statistics as JSON integers, others as floats."""
    return int(value) if float(value).is_integer() else float(value)


def result_record(result: Result) -> Dict[str, Any]:
    return {
        "system": result.system,
        "metric": result.metric,
        "score": result.score,
        "signature": result.signature,
        "n": result.n,
        "stats": [_plain(value) for value in result.stats],
        "stat_names": list(result.stat_names),
        "higher_is_better": result.higher_is_better,
    }


def format_json(results: Sequence[Result]) -> str:
    """JSON Lines: one object per (system, metric)."""
    return "".join(json.dumps(result_record(result), ensure_ascii=False) + "\n"
                   for result in results)


def format_tsv(results: Sequence[Result]) -> str:
    header = "system\tmetric\tscore\tn\tsignature\tstats\n"
    return header + "".join(
        f"{r.system}\t{r.metric}\t{r.score!r}\t{r.n}\t{r.signature}\t{format_numbers(r.stats)}\n"
        for r in results)


def format_text(results: Sequence[Result], width: int = 1) -> str:
    """Systems as rows, metrics as columns, and each metric's signature underneath."""
    metrics: List[str] = list(dict.fromkeys(result.metric for result in results))
    systems: List[str] = list(dict.fromkeys(result.system for result in results))
    cells = {(r.system, r.metric): f"{r.score:.{width}f}" for r in results}
    table = [["System", *metrics]]
    table += [[system, *(cells[system, metric] for metric in metrics)] for system in systems]
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    lines = ["  ".join([row[0].ljust(widths[0]),
                        *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:]))]).rstrip()
             for row in table]
    signatures = {r.metric: r.signature for r in results}
    lines.append("")
    lines += [f"{metric}: {signatures[metric]}" for metric in metrics]
    return "\n".join(lines) + "\n"


def format_results(results: Sequence[Result], output_format: str, width: int = 1) -> str:
    if output_format == "json":
        return format_json(results)
    if output_format == "tsv":
        return format_tsv(results)
    return format_text(results, width)
