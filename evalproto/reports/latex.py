"""A report's score and significance tables as LaTeX, for a paper: booktabs tables
(`\\usepackage{booktabs}`), every text from the input escaped."""

from __future__ import annotations

import math
from typing import List, Sequence

from evalproto.reports.report import TESTS, Report, decimals, display_names, fixed
from evalproto.stats.significance import SIGNIFICANCE_LEVEL

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
            "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
            "|": r"\textbar{}", "\n": " ", "\r": " ", "\t": " "}


def latex_escape(text: str) -> str:
    """Text as LaTeX source that typesets it as written (line breaks become spaces; a
    dash before a dash is kept apart, since TeX joins "--" into an en dash: a spec's
    "--word-order" must not read "–word-order")."""
    text = str(text)
    return "".join(_SPECIAL.get(character, character)
                   + ("{}" if character == "-" and text[at + 1:at + 2] == "-" else "")
                   for at, character in enumerate(text))


def latex_row(cells: Sequence[str]) -> str:
    """A tabular row of cells."""
    return " & ".join(cells) + r" \\"


def format_latex(report: Report, width: int = 1) -> str:
    """The score table (best in bold, 95% intervals) and, with two systems or more, one
    p-value matrix per metric and test (p <= 0.05 in bold)."""
    names = display_names(report.metrics)
    lines: List[str] = [f"% evalproto report: {len(report.systems)} systems, "
                        f"{report.segments} segments; needs \\usepackage{{booktabs}}"]
    lines += [r"\begin{table}[t]", r"\centering",
              r"\begin{tabular}{l" + "r" * len(report.metrics) + "}", r"\toprule",
              latex_row(["System", *(latex_escape(names[m.label]) for m in report.metrics)]),
              r"\midrule"]
    for number, system in enumerate(report.systems):
        cells = [latex_escape(system)]
        for metric in report.metrics:
            result = metric.results[number]
            places = decimals([r.score for r in metric.results], width)
            text = fixed(result.score, places, "--")
            if system in metric.best:
                text = rf"\textbf{{{text}}}"
            if result.ci is not None:
                text += (rf" {{\small ($\mu$ = {fixed(result.mean, places, '--')} $\pm$ "
                         rf"{fixed(result.ci, places, '--')})}}")
            cells.append(text)
        lines.append(latex_row(cells))
    signatures = "; ".join(
        f"{latex_escape(names[m.label])}: \\texttt{{{latex_escape(m.signature)}}}"
        for m in report.metrics)
    lines += [r"\bottomrule", r"\end{tabular}",
              rf"\caption{{Scores with 95\% bootstrap confidence intervals "
              rf"({report.options.samples} resamples; $\mu$ is their mean); best in bold. "
              rf"{signatures}}}",
              r"\end{table}"]
    for metric in report.metrics:
        for test, matrix in metric.tests.items():
            count = len(report.systems)
            lines += ["", r"\begin{table}[t]", r"\centering",
                      r"\begin{tabular}{l" + "r" * count + "}", r"\toprule",
                      latex_row(["", *(latex_escape(s) for s in report.systems)]), r"\midrule"]
            for i, system in enumerate(report.systems):
                cells = [latex_escape(system)]
                for j in range(count):
                    value = float(matrix[i, j])
                    if i == j:
                        cells.append("--")
                    elif math.isfinite(value) and value <= SIGNIFICANCE_LEVEL:
                        cells.append(rf"\textbf{{{value:.4f}}}")
                    else:
                        cells.append(fixed(value, 4, "--"))
                lines.append(latex_row(cells))
            lines += [r"\bottomrule", r"\end{tabular}",
                      rf"\caption{{{latex_escape(names[metric.label])}: p-values of the "
                      rf"{latex_escape(TESTS[test])} of every pair of systems; "
                      rf"$p \le {SIGNIFICANCE_LEVEL}$ in bold. Clusters: "
                      + "; ".join(", ".join(latex_escape(s) for s in cluster)
                                  for cluster in metric.clusters) + "}",
                      r"\end{table}"]
    return "\n".join(lines) + "\n"
