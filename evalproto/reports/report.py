"""The figures of a report comparing N systems, computed from stats tables (and, when
the texts are at hand, compare-mt's analyses of them), and their JSON form.

Every figure is a reduction over the tables' rows by the same code as corpus-score's:
scores and intervals are corpus-score --paired-bs's (--confidence's with one system),
the p-values against the first system are its --paired-bs and --paired-ar ones, groups
are corpus-score --groups --confidence's, sentence scores are -sl's. The HTML page
(evalproto.reports.html), LaTeX (evalproto.reports.latex) and JSON (`report_json`)
show the same `Report`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import InputError, UsageProblem
from evalproto.base.numerals import plain_data, to_json
from evalproto.base.progress import QUIET, Progress
from evalproto.base.version import __version__
from evalproto.stats import comparemt
from evalproto.stats.reductions import Analysis, Result, analyse, check_paired, segment_scores
from evalproto.stats.resampling import DEFAULT_SEED
from evalproto.stats.significance import (
    CLUSTER_RULE,
    SIGNIFICANCE_LEVEL,
    clusters,
    ttest_refusal,
)
from evalproto.stats.table import StatsTable

UNTAGGED = "(untagged)"
"""The group of the segments that carry no tag."""
TESTS = {"bs": "paired bootstrap", "ar": "approximate randomization",
         "ttest": "paired t-test"}


@dataclass(frozen=True)
class ReportOptions:
    """What a report computes beyond its scores: `samples` bootstrap resamples behind
    every interval, paired bootstrap and distribution; approximate randomization with
    `ar_trials` trials (`paired_ar`); the paired t-test for metrics whose corpus score
    is a mean (`ttest`); the seed of every draw; and how many of the largest wins and
    losses to show (`examples`)."""

    samples: int = 1000
    paired_ar: bool = False
    ar_trials: int = 10000
    ttest: bool = False
    seed: Optional[int] = DEFAULT_SEED
    examples: int = 10

    def __post_init__(self) -> None:
        if self.samples < 1 or self.ar_trials < 1 or self.examples < 0:
            raise ValueError("samples and ar_trials must be >= 1, examples >= 0")


@dataclass
class Texts:
    """The texts behind the rows, when the report is made from text: each segment's
    references, each system's hypotheses, and the sources if given."""

    refs: Sequence[Sequence[str]]
    hyps: Mapping[str, Sequence[str]]
    sources: Optional[Sequence[str]] = None
    freq_corpus: Optional[Sequence[str]] = None


@dataclass
class MetricFigures:
    """One metric's figures: each system's result (score, interval, n), the p-value
    matrices of the paired tests (NaN on the diagonal), the reasons a test was not run,
    and the clusters of systems that are not significantly different."""

    label: str
    name: str
    signature: str
    higher_is_better: bool
    results: List[Result]
    tests: Dict[str, np.ndarray] = field(default_factory=dict)
    test_samples: Dict[str, int] = field(default_factory=dict)
    refused: Dict[str, str] = field(default_factory=dict)
    clusters: List[List[str]] = field(default_factory=list)

    @property
    def best(self) -> List[str]:
        """The systems with the best score (several on a tie)."""
        scores = [result.score for result in self.results]
        top = max(scores) if self.higher_is_better else min(scores)
        return [result.system for result in self.results if result.score == top]


@dataclass
class SegmentFigures:
    """Two systems segment by segment: each metric's sentence scores (sacrebleu's -sl),
    and the segments where the second system wins or loses most by the first metric."""

    systems: Tuple[str, str]
    ids: List[str]
    scores: Dict[str, Tuple[np.ndarray, np.ndarray]]
    signatures: Dict[str, str]
    ranked_by: str
    wins: List[int]
    losses: List[int]

    def difference(self, label: str, higher_is_better: bool) -> np.ndarray:
        """Second minus first, signed so that a positive difference is a win."""
        first, second = self.scores[label]
        return (second - first) if higher_is_better else (first - second)


@dataclass
class Report:
    """Everything a report shows."""

    systems: List[str]
    segments: int
    metrics: List[MetricFigures]
    options: ReportOptions
    groups: List[Result] = field(default_factory=list)
    comparemt: Optional[comparemt.ComparisonReport] = None
    pairs: Optional[SegmentFigures] = None
    texts: Optional[Texts] = None
    notes: List[str] = field(default_factory=list)

    @property
    def cluster_rule(self) -> str:
        """How the clusters are drawn, in words, for the page and its JSON."""
        return CLUSTER_RULE

    def metric(self, label: str) -> MetricFigures:
        """The figures of the metric labelled `label` (e.g. "bleu")."""
        return next(metric for metric in self.metrics if metric.label == label)

    def to_dict(self) -> Dict[str, Any]:
        """Every figure of the report as plain data: the document `--json` writes."""
        return plain_data(report_record(self))


# -- computing ---------------------------------------------------------------------------

def build_report(tables: Sequence[StatsTable], options: ReportOptions,
                 texts: Optional[Texts] = None, progress: Progress = QUIET) -> Report:
    """Every figure of a report on the systems of `tables` (one table per metric, the
    systems in the same order, the first being the baseline)."""
    systems = tables[0].systems
    if options.paired_ar or options.ttest:  # asked for by name: the bootstrap is always there
        check_paired(len(systems))
    if options.ttest and all(ttest_refusal(table.metric, table.label) for table in tables):
        raise UsageProblem(ttest_refusal(tables[0].metric, tables[0].label) or "")
    metrics = [metric_figures(table, options, progress) for table in tables]
    report = Report(systems, len(tables[0].ids), metrics, options, texts=texts)
    if tables[0].groups is not None:
        report.groups = _group_results(tables, options, progress)
    if len(systems) > 1:
        report.pairs = _segment_figures(tables, metrics, options.examples)
    if texts is not None:
        phase = progress.start("compare-mt analyses", 1)
        report.comparemt = comparemt.compare_mt_figures(
            [refs[0] if refs else "" for refs in texts.refs], texts.hyps, texts.freq_corpus)
        phase.advance(1)
        phase.close()
        report.notes += _text_notes(texts)
    return report


def metric_figures(table: StatsTable, options: ReportOptions,
                   progress: Progress = QUIET) -> MetricFigures:
    """One metric's figures in a report: every system's score and interval, the
    all-pairs tests and the clusters they draw (the leaderboard's ranks come from
    here too, so that they are the report's)."""
    count = len(table.systems)
    if count > 1:
        analysis = Analysis(paired="bs", paired_n=options.samples, seed=options.seed,
                            groups=False, all_pairs=True)
    else:
        analysis = Analysis(resamples=options.samples, seed=options.seed, groups=False)
    results = analyse([table], analysis, progress)
    figures = MetricFigures(table.label, table.score_name, results[0].signature,
                            table.metric.higher_is_better, results)
    if count < 2:
        figures.clusters = [list(table.systems)]
        return figures
    figures.tests["bs"], figures.test_samples["bs"] = _matrix(results), options.samples
    if options.paired_ar:
        tested = analyse([table], Analysis(paired="ar", paired_n=options.ar_trials,
                                           seed=options.seed, groups=False, all_pairs=True),
                         progress)
        figures.tests["ar"], figures.test_samples["ar"] = _matrix(tested), options.ar_trials
    if options.ttest:
        reason = ttest_refusal(table.metric, table.label)
        if reason is None:
            tested = analyse([table], Analysis(paired="ttest", groups=False, all_pairs=True))
            figures.tests["ttest"] = _matrix(tested)
        else:
            figures.refused["ttest"] = reason
    order = clusters([result.score for result in results], figures.tests["bs"],
                     table.metric.higher_is_better)
    figures.clusters = [[table.systems[i] for i in cluster] for cluster in order]
    return figures


def _matrix(results: Sequence[Result]) -> np.ndarray:
    """The p-values of every pair of systems, as a symmetric matrix, NaN on the diagonal."""
    names = [result.system for result in results]
    matrix = np.full((len(names), len(names)), math.nan)
    for i, result in enumerate(results):
        for other, p in result.pairs.items():
            matrix[i, names.index(other)] = math.nan if p is None else p
    return matrix


def display_names(metrics: Sequence[MetricFigures]) -> Dict[str, str]:
    """How each metric is headed in reports: its score name, or its spec where two
    metrics share a name (bleu and "bleu --tokenize intl" are both BLEU)."""
    names = [metric.name for metric in metrics]
    return {metric.label: metric.name if names.count(metric.name) == 1 else metric.label
            for metric in metrics}


def fixed(value: Optional[float], places: int, missing: str) -> str:
    """A figure with `places` decimals, or `missing` where there is none (None, NaN)."""
    return missing if value is None or not math.isfinite(value) else f"{value:.{places}f}"


def decimals(values: Sequence[float], width: int) -> int:
    """Decimals to show a metric's scores with: `width` for scores of 10 and more, more
    for small ones (a COMET score of 0.853 must not read 0.9)."""
    finite = [abs(value) for value in values if value is not None and math.isfinite(value)]
    digits = len(str(int(max(finite)))) if finite and max(finite) >= 1 else 0
    return max(width, 3 - digits)


def _group_results(tables: Sequence[StatsTable], options: ReportOptions,
                   progress: Progress) -> List[Result]:
    """Each group's figures with intervals (corpus-score --groups --confidence's), the
    segments without a tag making the group UNTAGGED."""
    tagged = []
    for table in tables:
        tags = [list(segment) or [UNTAGGED] for segment in table.groups or []]
        tagged.append(StatsTable(table.label, table.metric, table.rows, table.ids, tags,
                                 table.units, table.nrefs, table.group_key))
    results = analyse(tagged, Analysis(resamples=options.samples, seed=options.seed), progress)
    return [result for result in results if result.group is not None]


def check_tags(groups: Sequence[Sequence[str]], where: str) -> None:
    """Refuse a tag that reads as the untagged group's name."""
    for number, tags in enumerate(groups, 1):
        if UNTAGGED in tags:
            raise InputError(f"{where}: line {number}: the tag {UNTAGGED!r} is the report's "
                             f"name for segments without a tag; rename it")


def _segment_figures(tables: Sequence[StatsTable], metrics: Sequence[MetricFigures],
                     examples: int) -> SegmentFigures:
    """The first two systems' sentence scores under every metric, and the segments
    where the second wins and loses most by the first metric (ties in segment order)."""
    first, second = tables[0].systems[:2]
    scores: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
    signatures: Dict[str, str] = {}
    for table in tables:
        pair = StatsTable(table.label, table.metric, {name: table.rows[name]
                                                      for name in (first, second)},
                          table.ids, nrefs=table.nrefs)
        computed = segment_scores([pair])
        scores[table.label] = (computed[0].scores, computed[1].scores)
        signatures[table.label] = computed[0].signature
    figures = SegmentFigures((first, second), list(tables[0].ids), scores, signatures,
                             tables[0].label, [], [])
    difference = figures.difference(tables[0].label, metrics[0].higher_is_better)
    order = np.argsort(-difference, kind="stable")
    figures.wins = [int(i) for i in order[:examples] if difference[i] > 0]
    losing = np.argsort(difference, kind="stable")
    figures.losses = [int(i) for i in losing[:examples] if difference[i] < 0]
    return figures


def _text_notes(texts: Texts) -> List[str]:
    notes = []
    if any(len(refs) > 1 for refs in texts.refs):
        notes.append("compare-mt's analyses use the first reference of each segment, as "
                     "compare-mt takes one reference.")
    carriage = sum("\r" in text for text in [*(r for refs in texts.refs for r in refs),
                                             *(h for hyps in texts.hyps.values() for h in hyps)])
    if carriage:
        notes.append(f"{carriage} segment texts hold a carriage return, which compare-mt "
                     f"would take for a line break; here each stays one segment, as in the "
                     f"score table.")
    return notes


# -- JSON --------------------------------------------------------------------------------

def _result_record(result: Result) -> Dict[str, Any]:
    record: Dict[str, Any] = {"system": result.system, "score": result.score,
                              "mean": result.mean, "ci": result.ci, "n": result.n}
    if result.group is not None:
        record = {"group": result.group, "untagged": result.group == UNTAGGED,
                  "metric": result.metric, **record}
    return record


def _bucket_record(table: comparemt.BucketTable) -> Dict[str, Any]:
    return {"title": table.title, "statistic": table.statistic, "labels": list(table.labels),
            "values": {name: list(values) for name, values in table.values.items()},
            "segments": {name: list(counts) for name, counts in table.segments.items()}}


def _comparemt_record(analysis: comparemt.ComparisonReport) -> Dict[str, Any]:
    words = analysis.word_accuracy
    record: Dict[str, Any] = {
        "definitions": "compare-mt 0.2.10",
        "bleu": dict(analysis.bleu), "length_ratio": dict(analysis.length_ratio),
        "word_accuracy": {"labels": list(words.labels), "systems": {
            name: {"fmeasure": accuracy.fmeasure.tolist(),
                   "precision": accuracy.precision.tolist(),
                   "recall": accuracy.recall.tolist(),
                   "matches": accuracy.matches.tolist(),
                   "ref_words": accuracy.ref_words.tolist(),
                   "hyp_words": accuracy.hyp_words.tolist()}
            for name, accuracy in words.systems.items()}},
        "bleu_by_length": _bucket_record(analysis.bleu_by_length),
        "length_diff": _bucket_record(analysis.length_diff),
        "sentence_bleu": _bucket_record(analysis.sentence_bleu),
        "ngrams": None,
    }
    if analysis.ngrams is not None:
        ngrams = analysis.ngrams
        record["ngrams"] = {
            "systems": list(ngrams.systems), "alpha": ngrams.alpha,
            **{key: [{"ngram": list(entry.ngram), "score": entry.score, "first": entry.first,
                      "second": entry.second} for entry in entries]
               for key, entries in (("first_better", ngrams.first_better),
                                    ("second_better", ngrams.second_better))}}
    return record


def report_record(report: Report) -> Dict[str, Any]:
    """Every figure of the report as JSON-ready data (NaN and infinities as null)."""
    metrics = []
    for metric in report.metrics:
        metrics.append({
            "metric": metric.label, "name": metric.name, "signature": metric.signature,
            "higher_is_better": metric.higher_is_better,
            "scores": [_result_record(result) for result in metric.results],
            "best": metric.best,
            "tests": {test: {"name": TESTS[test], "samples": metric.test_samples.get(test),
                             "p_values": matrix.tolist()}
                      for test, matrix in metric.tests.items()},
            "refused": dict(metric.refused),
            "clusters": metric.clusters,
            "bootstrap": {result.system: None if result.resampled is None
                          else result.resampled.tolist() for result in metric.results},
        })
    record: Dict[str, Any] = {
        "evalproto": __version__, "systems": list(report.systems),
        "segments": report.segments, "significance_level": SIGNIFICANCE_LEVEL,
        "samples": report.options.samples, "seed": report.options.seed,
        "cluster_rule": CLUSTER_RULE, "metrics": metrics,
        "groups": [_result_record(result) for result in report.groups],
        "comparemt": None if report.comparemt is None else _comparemt_record(report.comparemt),
        "segment_scores": None, "notes": list(report.notes),
    }
    if report.pairs is not None:
        pairs = report.pairs
        record["segment_scores"] = {
            "systems": list(pairs.systems), "ids": pairs.ids, "ranked_by": pairs.ranked_by,
            "signatures": pairs.signatures,
            "scores": {label: [first.tolist(), second.tolist()]
                       for label, (first, second) in pairs.scores.items()},
            "wins": [pairs.ids[i] for i in pairs.wins],
            "losses": [pairs.ids[i] for i in pairs.losses]}
    return record


def report_json(report: Report) -> str:
    """The report's figures as one JSON document."""
    return to_json(report_record(report), indent=1) + "\n"
