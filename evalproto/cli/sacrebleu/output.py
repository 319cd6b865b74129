"""Messages and results as sacrebleu prints them: its logger's lines, colours on a
terminal, a score's line or JSON, the table of several systems."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Union

import numpy as np
from tabulate import tabulate

COLOR_CODES = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m",
               "cyan": "\x1b[36m"}
COLOR_RESET = "\x1b[0m"


Number = Union[float, np.floating]



LOG = logging.getLogger("sacrebleu")
"""sacrebleu's logger: its dataset helpers, used for test sets, log to it as well."""


@contextlib.contextmanager
def messages(quiet: bool) -> Iterator[None]:
    """Messages on stderr as sacrebleu shows them: `sacreBLEU: ` and INFO and above, or
    with -q (when sacrebleu configures no logging) only warnings and errors, bare."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s" if quiet else "sacreBLEU: %(message)s"))
    handler.setLevel(logging.WARNING if quiet else logging.INFO)
    saved = LOG.level, LOG.propagate
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    try:
        yield
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(saved[0])
        LOG.propagate = saved[1]


def fail(*errors: str, code: int = 1) -> SystemExit:
    """Log sacrebleu's error lines; the caller raises the exit with its code."""
    for error in errors:
        LOG.error(error)
    return SystemExit(code)


class Output:
    """Standard output in UTF-8 whatever the locale, as sacrebleu reopens it, with
    sacrebleu's colours where they would reach a terminal: colorama strips them when
    stdout is not one, and NO_COLOR or --no-color turn them off."""

    def __init__(self, no_color: bool) -> None:
        self.stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n",
                                       line_buffering=True)
        self.colors = not (os.environ.get("NO_COLOR", False) or no_color) \
            and sys.stdout.isatty()

    def print(self, text: str = "") -> None:
        self.stream.write(f"{text}\n")

    def paint(self, text: str, color: str) -> str:
        return f"{COLOR_CODES[color]}{text}{COLOR_RESET}" if self.colors else text

    def close(self) -> None:
        """Flush; on a terminal with colours, end as colorama does at exit, with a reset."""
        if self.colors:
            self.stream.write(COLOR_RESET)
        self.stream.flush()
        self.stream.detach()



@dataclass
class ScoreLine:
    """A score as sacrebleu reports it: mean and CI from the bootstrap, p-value from a
    paired test, details after the score."""

    name: str
    score: Number
    details: str = ""
    mean: Optional[Number] = None
    ci: Optional[Number] = None
    p_value: Optional[float] = None

    def format(self, width: int, score_only: bool = False, signature: str = "",
               as_json: bool = False) -> str:
        """One score as sacrebleu's Score.format writes it."""
        width = decimals(width)
        fields: Dict[str, Any] = {"name": self.name, "score": float(f"{self.score:.{width}f}"),
                                  "signature": signature}
        text = f"{self.score:.{width}f}"
        if self.mean is not None and self.mean > 0:
            mean, ci = f"{self.mean:.{width}f}", f"{self.ci:.{width}f}"
            interval = f"μ = {mean} ± {ci}"
            text += f" ({interval})"
            if as_json:
                fields.update(confidence_mean=float(mean), confidence_var=float(ci),
                              confidence=interval)
        line = f"{self.name}|{signature}" if signature else self.name
        line = f"{line} = {text}"
        if self.details:
            line += f" {self.details}"
            fields["verbose_score"] = self.details
        if score_only:
            return text
        if as_json:
            for pair in signature.split("|"):
                key, value = pair.split(":")
                fields[key] = value
            return json.dumps(fields, indent=1, ensure_ascii=False)
        return line

    def as_json(self) -> Dict[str, Optional[float]]:
        """A paired test's result as sacrebleu's JSON holds it. sacrebleu 2.6 cannot
        write the float32 means of chrF and TER; they are written here as numbers."""
        return {key: None if value is None else float(value) for key, value in
                (("score", self.score), ("p_value", self.p_value), ("mean", self.mean),
                 ("ci", self.ci))}


def print_single_results(out: Output, lines: List[str], output_format: str) -> None:
    """Single-system scores: JSON objects (a list of them for several metrics), or text
    lines aligned on their first '='."""
    if output_format == "json":
        out.print("[\n" + ",\n".join(lines) + "\n]" if len(lines) > 1 else lines[0])
        return
    if "μ" in lines[0]:
        interval = re.compile(r"(\(μ = [0-9\.]+ ± [0-9\.]+\))")
        lines = [interval.sub(lambda match: out.paint(match.group(), "cyan"), line)
                 for line in lines]
    if len(lines) == 1:
        out.print(lines[0])
        return
    aligned = []
    for line in lines:
        if "=" in line:
            aligned.append((line.index("=") - 1, line))
        else:
            out.print(line)
    if aligned:
        width = max(position for position, _ in aligned)
        for position, line in aligned:
            out.print(f"{line[:position]:>{width}}{line[position:]}")


Cell = Union[str, ScoreLine]


def _json_cell(cell: Cell) -> Any:
    return cell if isinstance(cell, str) else cell.as_json()


def print_results_table(out: Output, columns: Dict[str, List[Cell]],
                        signatures: Dict[str, str], args: argparse.Namespace) -> None:
    """Several systems: a JSON list, or a table (text or LaTeX) with, for paired tests,
    sacrebleu's explanation, then the signatures."""
    decimals(args.width)
    if args.format == "json":
        names = columns["System"]
        rows = [{"system": name, **{metric: _json_cell(cells[i])
                                    for metric, cells in columns.items() if metric != "System"}}
                for i, name in enumerate(names)]
        out.print(json.dumps(rows, indent=4))
        return
    table_format = "fancy_grid" if args.format == "text" else "latex_booktabs"
    break_before_p = "\n" if table_format == "fancy_grid" else " "
    formatted: Dict[str, List[str]] = {"System": [str(name) for name in columns["System"]]}
    bootstrap = False
    for metric, cells in columns.items():
        if metric == "System":
            continue
        texts: List[str] = []
        for cell in cells:
            if isinstance(cell, str):
                texts.append(cell)
                continue
            text = f"{cell.score:.{args.width}f}"
            if cell.mean is not None:
                bootstrap = True
                text += f" ({cell.mean:.{args.width}f} ± {cell.ci:.{args.width}f})"
            if cell.p_value is not None:
                p_value = f"(p = {cell.p_value:.4f})"
                text += break_before_p + (out.paint(p_value, "red") if cell.p_value > 0.05
                                          else p_value + "*")
            texts.append(text)
        formatted[metric + " (μ ± 95% CI)" if bootstrap else metric] = texts

    painted: Dict[str, List[str]] = {}
    baseline_name, has_baseline = "", False
    for header, texts in formatted.items():
        if texts and (texts[0].startswith("Baseline:") or has_baseline):
            if texts[0].startswith("Baseline:"):
                baseline_name = texts[0]
            has_baseline = True
            texts[0] = out.paint(texts[0], "yellow")
        painted[out.paint(header, "cyan")] = texts
    out.print(tabulate(painted, headers="keys", tablefmt=table_format, colalign=("right",),
                       stralign="center", numalign="center", floatfmt=f".{args.width}f"))
    out.print()
    if args.paired_bs or args.paired_ar:
        print_paired_header(out, args, baseline_name)
    out.print("-----------------")
    out.print("Metric signatures")
    out.print("-----------------")
    for name, signature in signatures.items():
        out.print(f" - {name:<10} {signature}")


def print_paired_header(out: Output, args: argparse.Namespace, baseline_name: str) -> None:
    """sacrebleu's explanation of its paired test, above the signatures."""
    if args.paired_bs:
        title = f"Paired bootstrap resampling test with {args.paired_bs_n} resampling trials"
        shown = "Actual system score / bootstrap estimated true mean / 95% CI are provided"
    else:
        title = f"Paired approximate randomization test with {args.paired_ar_n} trials"
        shown = "Actual system score is provided"
    baseline = out.paint("baseline", "yellow")
    null = out.paint("Null hypothesis", "green")
    for line in [
        "-" * len(title), title, "-" * len(title),
        f" - Each system is pairwise compared to {out.paint(baseline_name, 'yellow')}.",
        f"   {shown} for each metric.",
        "",
        f" - {null}: the system and the {baseline} translations are essentially",
        f"   generated by the same underlying process. For a given system and the {baseline},",
        "   the p-value is roughly the probability of the absolute score difference (delta)",
        "   or higher occurring due to chance, under the assumption that the "
        f"{null.lower()} is correct.",
        "",
        f" - Assuming a significance threshold of 0.05, the {null.lower()} can be rejected",
        '   for p-values < 0.05 (marked with "*"). This means that the delta is unlikely to '
        "be attributed",
        f'   to chance, hence the system is significantly "different" than the {baseline}.',
        f"   Otherwise, the p-values are {out.paint('highlighted in red', 'red')}.",
        "",
        " - NOTE: Significance does not tell whether a system is \"better\" than the "
        f"{baseline} but rather",
        '   emphasizes the "difference" of the systems in terms of the replicability of '
        "the delta.",
        "",
    ]:
        out.print(line)



def decimals(width: int) -> int:
    """-w as a number of decimals (sacrebleu formats its first score with it)."""
    if width < 0:
        raise fail(f"-w {width}: the width is a number of decimals, 0 or more")
    return width
