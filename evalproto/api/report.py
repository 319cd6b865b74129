"""The report: every figure of `evalproto report`, from a corpus or from stats files,
and its page as HTML, LaTeX or JSON."""

from __future__ import annotations

import io
from contextlib import ExitStack
from typing import List, Optional, Sequence

from evalproto.api.scoring import MetricLike, corpus_tables, group_corpus
from evalproto.api.statsfiles import stats_tables
from evalproto.base.errors import InputError
from evalproto.base.progress import QUIET, Progress
from evalproto.readers.text import Corpus, read_bytes, read_lines, split_lines
from evalproto.reports.report import (
    Report,
    ReportOptions,
    Texts,
    build_report,
    check_tags,
    report_json,
)
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import IN_PROCESS, MetricSpec

REPORT_METRICS = (MetricSpec(IN_PROCESS, "bleu"), MetricSpec(IN_PROCESS, "chrf"))
"""The metrics of a report when none is named."""


def report_corpus(corpus: Corpus, metrics: Sequence[MetricLike] = REPORT_METRICS,
                  options: Optional[ReportOptions] = None, *, groups: Optional[str] = None,
                  source: Optional[str] = None, freq_corpus: Optional[str] = None,
                  jobs: int = 1, timeout: Optional[float] = DEFAULT_TIMEOUT,
                  progress: Progress = QUIET) -> Report:
    """Every figure of a report on a corpus's systems (the first is the baseline):
    scores with intervals, all-pairs tests and clusters, groups (from the `groups`
    file, or the corpus's own tags), sentence scores with wins and losses, and
    compare-mt's analyses (word frequencies from the `freq_corpus` file, or from the
    first reference). `source` is a file of the segments' sources, shown beside the
    wins and losses. Metrics are named as compare() takes them ("bleu", a MetricSpec,
    a loaded Metric)."""
    group_corpus(corpus, groups)
    if corpus.tags is not None:
        check_tags(corpus.tags, groups or "the dataset's tags")
    sources = None
    if source is not None:
        sources = read_lines(source)
        if len(sources) != len(corpus.refs):
            raise InputError(f"{source} has {len(sources)} lines but there are "
                             f"{len(corpus.refs)} segments; the source file needs one line "
                             f"per segment")
    texts = Texts(corpus.refs, corpus.systems, sources,
                  None if freq_corpus is None else compare_mt_lines(freq_corpus))
    with ExitStack() as stack:
        tables = corpus_tables(stack, corpus, metrics, jobs, timeout, progress)
        return build_report(tables, options or ReportOptions(), texts, progress)


def compare_mt_lines(path: str) -> List[str]:
    """The lines of a UTF-8 file as compare-mt reads them (Python's text mode: "\n",
    "\r\n" and a lone "\r" end a line), checked as evalproto checks text files."""
    data = read_bytes(path)
    split_lines(path, data)  # an error names the line of a byte that is not UTF-8
    if not data:
        raise InputError(f"{path}: file is empty")
    return [line[:-1] if line.endswith("\n") else line
            for line in io.StringIO(data.decode("utf-8"), newline=None)]


def report_from_stats(paths: Sequence[str], evaluators: Sequence[str] = (),
                      options: Optional[ReportOptions] = None, groups: Optional[str] = None,
                      partial: bool = False, timeout: Optional[float] = DEFAULT_TIMEOUT,
                      progress: Progress = QUIET) -> Report:
    """A report on stats files (no text analyses: the texts are not in them). Files of
    different metrics for the same systems and segments may be mixed (BLEU written by
    `evalproto stats`, COMET by `evalproto import-scores`): each metric's shards are
    joined as `reduce` joins them."""
    with ExitStack() as stack:
        tables = stats_tables(stack, paths, evaluators, partial, timeout, groups,
                               mixed=True)
        if tables[0].groups is not None:
            check_tags(tables[0].groups, groups or "the groups")
        return build_report(tables, options or ReportOptions(), None, progress)


def format_report(report: Report, output_format: str = "html", width: int = 1,
                  progress: Progress = QUIET) -> str:
    """A report as an HTML page ("html"), LaTeX tables ("latex") or JSON ("json")."""
    if output_format == "html":
        from evalproto.reports.html import format_html
        return format_html(report, width, progress)
    if output_format == "latex":
        from evalproto.reports.latex import format_latex
        return format_latex(report, width)
    if output_format == "json":
        return report_json(report)
    raise ValueError(f"unknown report format {output_format!r}; expected html, latex or json")
