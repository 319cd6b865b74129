"""The reductions every report is made of: corpus figures, figures per group, bootstrap
intervals, paired tests, and each segment's own score. One implementation serves every
kind of table (MT corpora, datasets, LM logs, stats files): a reduction only ever sums
rows and asks the metric for its figures.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import EvalprotoError, UsageProblem
from evalproto.base.numerals import plain_data
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics.signature import Signature
from evalproto.stats.resampling import (
    DEFAULT_SEED,
    Figures,
    PairedResult,
    bootstrap_p_value,
    checked_total,
    confidence_interval,
    estimate_ci,
    observed_differences,
    randomization_pairs,
    resampled_figures,
)
from evalproto.stats.significance import check_ttest, paired_ttest, pairs_of
from evalproto.stats.table import MAIN, StatsTable, group_rows, unit_rows


@dataclass
class Analysis:
    """What to compute beyond the corpus figures. `resamples` is the number of
    bootstrap resamples behind every system's interval (0: none); `paired` tests each
    system against the first ("bs": paired bootstrap, `paired_n` resamples, which also
    give every system's interval; "ar": approximate randomization, `paired_n` trials;
    "ttest": the paired t-test of segment scores, for metrics whose corpus score is
    their mean); `all_pairs` tests every pair of systems, not only the first against
    each other (see Result.pairs); `inclusive` counts ties in p-values (a log compared
    with itself gets p = 1); `groups` asks for the figures of every group of segments
    too."""

    resamples: int = 0
    paired: Optional[str] = None
    paired_n: int = 0
    seed: Optional[int] = DEFAULT_SEED
    inclusive: bool = False
    groups: bool = True
    all_pairs: bool = False

    def __post_init__(self) -> None:
        if self.paired not in (None, "bs", "ar", "ttest"):
            raise ValueError(f"paired must be 'bs', 'ar', 'ttest' or None, got "
                             f"{self.paired!r}")
        if self.resamples < 0 or self.paired_n < 0:
            raise ValueError("the numbers of resamples and trials cannot be negative")
        if self.paired in ("bs", "ar") and self.paired_n < 1:
            raise ValueError("a paired test needs paired_n >= 1 (resamples or trials)")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(
                self.seed, int) or self.seed < 0):
            raise ValueError(f"seed must be a whole number >= 0 or None, got {self.seed!r}")

    def check_systems(self, count: int) -> None:
        """Refuse a paired test of fewer than two systems."""
        if self.paired:
            check_paired(count)

    @property
    def bootstrap_n(self) -> int:
        """Resamples behind the reported intervals; the paired bootstrap brings its own."""
        return self.paired_n if self.paired == "bs" else self.resamples

    def signature_prefix(self, nrefs: Optional[int | str]) -> str:
        """The data's part of a signature, in sacrebleu's order: nrefs (data without
        references, an LM log, has none), bs, ar, seed."""
        fields: List[Tuple[str, Any]] = [] if nrefs is None else [("nrefs", nrefs)]
        if self.bootstrap_n:
            fields.append(("bs", self.bootstrap_n))
        if self.paired == "ar":
            fields.append(("ar", self.paired_n))
        if self.bootstrap_n or self.paired in ("bs", "ar"):
            fields.append(("seed", str(self.seed).lower()))
        return str(Signature.of(fields))


def _joined(*parts: str) -> str:
    """Signature parts as one signature (an empty part adds no field)."""
    return "|".join(part for part in parts if part)


def check_paired(systems: int) -> None:
    """The one rule of every paired test: it compares two or more systems, the first
    being the baseline."""
    if systems < 2:
        raise UsageProblem(f"paired tests compare systems: give two or more (the first is "
                           f"the baseline), not {systems}")


@dataclass
class Estimate:
    """One figure, with what the analysis adds to it."""

    value: float
    mean: Optional[float] = None
    ci: Optional[float] = None
    p_value: Optional[float] = None


@dataclass
class Result:
    """One metric's figures for one system, over the corpus or over one group. `score`,
    `mean`, `ci` and `p_value` are the main figure's; `figures` holds every figure of
    a metric with several (LM Challenge's rates). `name` is the score's name and
    `verbose` what sacrebleu prints after it (BLEU's precisions); `extra_decimals` what
    the text shows beyond a percentage's decimals (see Evaluator.extra_decimals)."""

    system: str
    metric: str
    score: float
    signature: str
    n: int
    stats: np.ndarray
    stat_names: Tuple[str, ...]
    higher_is_better: bool
    group: Optional[str] = None
    mean: Optional[float] = None
    ci: Optional[float] = None
    p_value: Optional[float] = None
    baseline: bool = False
    figures: Dict[str, Estimate] = field(default_factory=dict)
    group_key: str = "group"
    name: str = ""
    verbose: str = ""
    extra_decimals: int = 0
    pairs: Dict[str, float] = field(default_factory=dict)
    """The main figure's p-value against each other system tested with it (every
    other one with Analysis.all_pairs)."""
    resampled: Optional[np.ndarray] = None
    """The main figure on each bootstrap resample behind `mean` and `ci`."""

    def to_dict(self) -> Dict[str, Any]:
        """Every field as plain data: Python numbers and lists, None for a figure that is
        not finite (see Comparison.to_dict for corpus-score's records)."""
        return plain_data(self)


def analyse(tables: Sequence[StatsTable], analysis: Analysis,
            progress: Progress = QUIET) -> List[Result]:
    """Corpus results first (system by system, metrics in order), then each group's."""
    groups = tables[0].groups if analysis.groups else None
    subsets: List[Tuple[Optional[str], Optional[np.ndarray]]] = [(None, None)]
    if groups is not None:
        subsets += list(group_rows(groups).items())
    results: List[Result] = []
    for group, picked in subsets:
        per_metric = [_analyse_table(table if picked is None else table.subset(picked),
                                     analysis, group, progress) for table in tables]
        for system_results in zip(*per_metric):
            results.extend(system_results)
    return results


def _analyse_table(table: StatsTable, analysis: Analysis, group: Optional[str],
                   progress: Progress) -> List[Result]:
    signature = _joined(analysis.signature_prefix(table.nrefs), table.metric.signature())
    figures = _tested(table, getattr(table.metric, "tested", None))
    baseline_name = table.systems[0]
    units = ([unit_rows(rows, table.units) for rows in table.rows.values()]
             if analysis.bootstrap_n or analysis.paired else [])  # what resampling draws
    where = table.label + (f", {table.group_key} {group}" if group else "")
    resampled: List[Dict[str, np.ndarray]] = []
    if analysis.bootstrap_n:  # every system on the same resamples, in one pass
        phase = progress.start(f"resampling: {where}", analysis.bootstrap_n)
        with placed(f"the bootstrap resamples of {where}"):
            resampled = resampled_figures(units, figures, analysis.bootstrap_n, analysis.seed,
                                          table.resample_dtype, phase.advance)
        phase.close()
    tested: Dict[Tuple[int, int], Dict[str, PairedResult]] = {}
    if analysis.paired and len(units) > 1:
        tested = _paired_tests(table, units, figures, resampled, analysis, where, progress)
    results = []
    for number, (system, rows) in enumerate(table.rows.items()):
        where = f"{system}, {table.label}" + (f", {table.group_key} {group}" if group else "")
        total = checked_total(rows, table.stat_names, where)
        with placed(f"the corpus score of {where}"):
            figures_of_total = table.figures(total[None, :])
        estimates = {name: Estimate(float(value[0])) for name, value in
                     figures_of_total.items()}
        draws = resampled[number] if resampled else {}
        interval = estimate_ci if analysis.paired in ("bs", "ar") else confidence_interval
        for name, values in draws.items():
            estimates[name].mean, estimates[name].ci = interval(values)
        for name, result in tested.get((0, number), {}).items():
            estimates[name].p_value = result.p_value
        main_name = MAIN if MAIN in estimates else next(iter(estimates))
        main = estimates[main_name]
        pairs = {table.systems[j if i == number else i]: result[main_name].p_value
                 for (i, j), result in tested.items() if number in (i, j)
                 and main_name in result}
        results.append(Result(
            system=system, metric=table.label, score=main.value, signature=signature,
            n=len(rows), stats=total, stat_names=table.stat_names,
            higher_is_better=table.metric.higher_is_better, group=group, mean=main.mean,
            ci=main.ci, p_value=main.p_value,
            baseline=bool(analysis.paired) and system == baseline_name,
            figures=estimates, group_key=table.group_key, name=table.score_name,
            verbose=table.verbose_score(total), extra_decimals=table.extra_decimals,
            pairs=pairs, resampled=draws.get(main_name)))
    return results


def _paired_tests(table: StatsTable, units: List[np.ndarray], figures: Figures,
                  resampled: List[Dict[str, np.ndarray]], analysis: Analysis, where: str,
                  progress: Progress) -> Dict[Tuple[int, int], Dict[str, PairedResult]]:
    """The paired test of each pair of systems (see significance.pairs_of); the
    bootstrap reads every system's figures on the same resamples (`resampled`). Every
    pair is tested on the same draws as a test of that pair alone, so the figures are
    those of sacrebleu's test of the two."""
    pairs = pairs_of(len(units), analysis.all_pairs)
    if analysis.paired == "ttest":
        check_ttest(table.metric, table.label)
        scores = [table.figures(np.asarray(rows, dtype=np.float64))[MAIN] for rows in units]
        return {(i, j): {MAIN: PairedResult(paired_ttest(scores[i], scores[j]))}
                for i, j in pairs}
    if analysis.paired == "ar":
        phase = progress.start(f"paired test: {where}", analysis.paired_n)
        tested = randomization_pairs(units, pairs, figures, analysis.paired_n, analysis.seed,
                                     analysis.inclusive, phase.advance)
        phase.close()
        return tested
    tested = {}
    for i, j in pairs:
        observed = observed_differences(figures, units[i], units[j])
        tested[i, j] = {name: PairedResult(bootstrap_p_value(
            resampled[i][name], resampled[j][name], observed[name], analysis.inclusive))
            for name in resampled[i]}
    return tested


def _tested(table: StatsTable, tested: Optional[Sequence[str]]
            ) -> Callable[[np.ndarray], Dict[str, np.ndarray]]:
    """The table's figures, limited to those the metric has intervals and tests for."""
    if tested is None:
        return table.figures
    return lambda totals: {name: values for name, values in table.figures(totals).items()
                           if name in tested}


@dataclass
class SegmentScores:
    """One metric's score of each segment of one system, and the signature it was
    scored under (sentence-level BLEU uses effective order, as sacrebleu's -sl)."""

    system: str
    metric: str
    signature: str
    scores: np.ndarray
    extra_decimals: int = 0
    name: str = ""
    """The score's name as sacrebleu names it (BLEU, chrF2, TER)."""


def segment_scores(tables: Sequence[StatsTable]) -> List[SegmentScores]:
    """Every segment's own score, for every metric and system (sacrebleu's -sl)."""
    results = []
    for table in tables:
        sentences = getattr(table.metric, "for_sentences", None)
        scorer = sentences() if sentences else table.metric
        signature = _joined(Analysis().signature_prefix(table.nrefs), scorer.signature())
        for system, rows in table.rows.items():
            try:
                scores = np.asarray(scorer.score_many(np.asarray(rows, dtype=np.float64)))
            except EvalprotoError as exc:
                if exc.item is None:
                    raise
                raise exc.at(f"segment {table.ids[exc.item]} of {system}, {table.label}"
                             ) from None
            results.append(SegmentScores(system, table.label, signature, scores,
                                         table.extra_decimals, table.score_name))
    return results


@contextmanager
def placed(where: str) -> Iterator[None]:
    """A failure of the metric inside (an evaluator command's EVAL) said to be `where`:
    the corpus score of a system, not an item of the call."""
    try:
        yield
    except EvalprotoError as exc:
        raise exc.at(where) from None
