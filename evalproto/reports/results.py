"""Writing results for people (text tables) and for programs (JSON Lines, TSV)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from evalproto.base.numerals import format_numbers, json_number, plain_data, to_json
from evalproto.stats.reductions import Result, SegmentScores
from evalproto.stats.significance import SIGNIFICANCE_LEVEL

FORMATS = ("text", "json", "tsv")
"""The output formats of corpus-score and reduce (-f)."""
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def escape(text: str) -> str:
    """A name or tag for a text or TSV report, with backslash, tab and line breaks
    written as escapes: a tag holding a newline must not forge a line of the report.
    The undecodable bytes of a file name that is not UTF-8 are written as escapes too."""
    text = text.translate(_ESCAPES)
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def result_record(result: Result) -> Dict[str, Any]:
    """A result as a JSON object of plain data: evalproto's keys, with sacrebleu's
    `name` (BLEU, chrF2, TER) and, where sacrebleu has one, its `verbose_score` beside
    them."""
    record: Dict[str, Any] = {"system": result.system, "metric": result.metric}
    if result.group is not None:
        record["group"] = result.group
    record.update({
        "name": result.name,
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
    if result.verbose:
        record["verbose_score"] = result.verbose
    return plain_data(record)


def format_json(results: Sequence[Result]) -> str:
    """JSON Lines: one object per (system, metric), and per group when there are groups."""
    return "".join(to_json(result_record(result)) + "\n" for result in results)


def format_tsv(results: Sequence[Result]) -> str:
    columns = ["system", "group", "metric", "score", "mean", "ci", "p_value", "n",
               "signature", "stats"]

    def cell(value: Optional[float]) -> str:
        return "" if value is None else repr(value)

    lines = ["\t".join(columns)]
    for r in results:
        lines.append("\t".join([escape(r.system), escape(r.group or ""), escape(r.metric),
                                repr(r.score), cell(r.mean), cell(r.ci), cell(r.p_value),
                                str(r.n), escape(r.signature), format_numbers(r.stats)]))
    return "\n".join(lines) + "\n"


def _cell(result: Result, width: int) -> str:
    """A score as the text shows it, with its interval and p-value when there are; in
    `width` decimals, and the more a metric asks for (a fraction's two)."""
    width += result.extra_decimals
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
    header = ["System", *(f"{escape(m)} (μ ± 95% CI)" if m in with_ci else escape(m)
                          for m in metrics)]
    baselines = {r.system for r in results if r.baseline}
    cells = {(r.system, r.metric): _cell(r, width) for r in results}
    table = [header] + [[f"Baseline: {escape(s)}" if s in baselines else escape(s),
                         *(cells[s, m] for m in metrics)] for s in systems]
    widths = [max(len(row[column]) for row in table) for column in range(len(header))]
    return ["  ".join([row[0].ljust(widths[0]),
                       *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:]))]).rstrip()
            for row in table]


def _details(results: Sequence[Result], width: int) -> List[str]:
    """Each system's sacrebleu line for each metric that has details, as sacrebleu
    prints it but for the signature (`BLEU = 40.8 77.5/52.2/36.1/24.7 (BP = ...)`),
    after the system and the metric."""
    shown = [r for r in results if r.verbose]
    if not shown:
        return []
    systems = max(len(escape(r.system)) for r in shown)
    metrics = max(len(escape(r.metric)) for r in shown)
    return ["", *(f"{escape(r.system):<{systems}}  {escape(r.metric):<{metrics}}  {r.name} = "
                  f"{r.score:.{width + r.extra_decimals}f} {r.verbose}" for r in shown)]


def format_text(results: Sequence[Result], width: int = 1) -> str:
    """Systems as rows and metrics as columns, with each metric's details (BLEU's), one
    table per group, then signatures."""
    lines: List[str] = []
    for group in dict.fromkeys(r.group for r in results):
        if group is not None:
            lines += ["", f"Group: {escape(group)}"]
        lines += _table([r for r in results if r.group == group], width)
        if group is None:
            lines += _details([r for r in results if r.group is None], width)
    lines.append("")
    signatures = {r.metric: r.signature for r in results}
    lines += [f"{escape(metric)}: {escape(signature)}"
              for metric, signature in signatures.items()]
    if any(r.p_value is not None for r in results):
        lines.append(f"*: p <= {SIGNIFICANCE_LEVEL}, significantly different from the baseline")
    return "\n".join(lines) + "\n"


def format_scores(results: Sequence[Result], width: int = 1) -> str:
    """Only the scores (sacrebleu's -b), one per line, in the order of the JSON rows:
    each system's metrics, then each group's; as the text table shows them."""
    return "".join(_cell(result, width) + "\n" for result in results)


def format_segments(results: Sequence[SegmentScores], ids: Sequence[str], output_format: str,
                    width: int = 1, score_only: bool = False) -> str:
    """Each segment's own score, for every system and metric (sacrebleu's -sl), then the
    signatures they were scored under; or, with `score_only` (-b), only the scores,
    one per line."""
    systems = list(dict.fromkeys(result.system for result in results))
    metrics = list(dict.fromkeys(result.metric for result in results))
    scores = {(result.metric, result.system): result.scores for result in results}
    decimals = {result.metric: width + result.extra_decimals for result in results}
    signatures = {result.metric: result.signature for result in results}
    names = {result.metric: result.name for result in results}
    cells = [(segment, system, metric, float(scores[metric, system][i]))
             for i, segment in enumerate(ids) for system in systems for metric in metrics]
    if output_format == "json":
        return "".join(to_json({"system": system, "metric": metric, "name": names[metric],
                                "segment": segment, "score": score,
                                "signature": signatures[metric]}) + "\n"
                       for segment, system, metric, score in cells)
    if output_format == "tsv":
        return "segment\tsystem\tmetric\tscore\tsignature\n" + "".join(
            f"{escape(segment)}\t{escape(system)}\t{escape(metric)}\t{score!r}\t"
            f"{escape(signatures[metric])}\n" for segment, system, metric, score in cells)
    if score_only:
        return "".join(f"{score:.{decimals[metric]}f}\n" for _, _, metric, score in cells)
    lines = ["\t".join(["Segment", "System", *map(escape, metrics)])]
    lines += ["\t".join([escape(segment), escape(system),
                         *(f"{scores[metric, system][i]:.{decimals[metric]}f}"
                           for metric in metrics)])
              for i, segment in enumerate(ids) for system in systems]
    lines.append("")
    lines += [f"{escape(metric)}: {escape(signature)}" for metric, signature in signatures.items()]
    return "\n".join(lines) + "\n"


def format_results(results: Sequence[Result], output_format: str, width: int = 1) -> str:
    """Results as corpus-score prints them: a text table (`width` decimals), JSON
    Lines or TSV."""
    if output_format == "json":
        return format_json(results)
    if output_format == "tsv":
        return format_tsv(results)
    return format_text(results, width)
