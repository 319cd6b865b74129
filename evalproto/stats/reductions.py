"""From sources of statistics to results: tables of stats rows, and the reductions over
them that every report is made of (corpus score, bootstrap CI, paired tests, groups).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Hashable, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from evalproto.base.errors import EvalprotoError
from evalproto.base.items import Item
from evalproto.cli.progress import Progress
from evalproto.stats.resampling import (
    DEFAULT_SEED,
    approximate_randomization,
    bootstrap_scores,
    checked_total,
    estimate_ci,
    paired_bootstrap,
)


CHUNK_ITEMS = 2000


class StatsSource(Protocol):
    """What an in-process Evaluator and an EvaluatorProcess have in common."""

    stat_names: Optional[Tuple[str, ...]]

    @property
    def higher_is_better(self) -> bool: ...

    def signature(self) -> str: ...

    def stats_many(self, items: Sequence[Item]) -> np.ndarray: ...

    def score_many(self, vectors: np.ndarray) -> np.ndarray: ...

    def for_sentences(self) -> StatsSource: ...


@dataclass
class MetricTable:
    """One metric's stats rows for every system, aligned segment by segment."""

    label: str
    source: StatsSource
    rows: Dict[str, np.ndarray]

    @property
    def stat_names(self) -> Tuple[str, ...]:
        return tuple(self.source.stat_names or ())


def stats_tables(sources: Sequence[Tuple[str, StatsSource]], refs: Sequence[Sequence[str]],
                 systems: Dict[str, Sequence[str]], progress: Optional[Progress] = None,
                 first_segment: int = 1) -> List[MetricTable]:
    """Every metric's rows for every system. Items go segment by segment across the
    systems, so an evaluator's reference cache is hit by each system in turn; they are
    sent in chunks, so that progress can be shown. A failure on one item is reported
    as the segment (numbered from `first_segment`) of the system it came from."""
    names = list(systems)
    items = [(segment_refs, systems[name][i])
             for i, segment_refs in enumerate(refs) for name in names]
    progress = progress or Progress(len(items) * len(sources), "scoring")
    tables = []
    for label, source in sources:
        parts = []
        for start in range(0, len(items), CHUNK_ITEMS):
            try:
                parts.append(source.stats_many(items[start:start + CHUNK_ITEMS]))
            except EvalprotoError as exc:
                if exc.item is None:
                    raise
                segment, system = divmod(start + exc.item, len(names))
                raise exc.at(f"segment {first_segment + segment} of {names[system]}") from None
            progress.advance(len(parts[-1]))
        rows = np.concatenate(parts)
        rows = rows.reshape(len(refs), len(names), rows.shape[1])
        tables.append(MetricTable(label, source, {name: rows[:, j, :]
                                                  for j, name in enumerate(names)}))
    progress.finish()
    return tables


@dataclass
class Analysis:
    """What to compute beyond the corpus score."""

    confidence: int = 0
    paired: Optional[str] = None  # "bs" or "ar": each system against the first
    paired_n: int = 0
    seed: Optional[int] = DEFAULT_SEED
    groups: Optional[Sequence[Sequence[str]]] = None  # each segment's tags

    @property
    def bootstrap_n(self) -> int:
        """Resamples behind the reported CIs; paired bootstrap brings its own."""
        return self.paired_n if self.paired == "bs" else self.confidence

    def signature_prefix(self, nrefs: int | str) -> str:
        """The data's part of a signature, in sacrebleu's order: nrefs, bs, ar, seed."""
        fields = [f"nrefs:{nrefs}"]
        if self.bootstrap_n:
            fields.append(f"bs:{self.bootstrap_n}")
        if self.paired == "ar":
            fields.append(f"ar:{self.paired_n}")
        if self.bootstrap_n or self.paired:
            fields.append(f"seed:{str(self.seed).lower()}")
        return "|".join(fields)


@dataclass
class Result:
    """One metric's score for one system, over the corpus or over one group."""

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


def rows_by_key(keys: Sequence[Hashable]) -> Dict[Hashable, np.ndarray]:
    """For every distinct key, in order of first appearance, the rows that hold it, in
    order; in one pass over the rows (a pass per key is slow with thousands of keys)."""
    codes: Dict[Hashable, int] = {}
    labels = np.fromiter((codes.setdefault(key, len(codes)) for key in keys), dtype=np.intp,
                         count=len(keys))
    ends = np.cumsum(np.bincount(labels, minlength=len(codes)))
    return dict(zip(codes, np.split(np.argsort(labels, kind="stable"), ends[:-1])))


def group_rows(groups: Sequence[Sequence[str]]) -> Dict[str, np.ndarray]:
    """For every tag, in order of first appearance, the segments that carry it."""
    carriers = [(segment, tag) for segment, tags in enumerate(groups)
                for tag in dict.fromkeys(tags)]
    segments = np.array([segment for segment, _ in carriers], dtype=np.intp)
    return {tag: segments[found]
            for tag, found in rows_by_key([tag for _, tag in carriers]).items()}


def analyse(tables: Sequence[MetricTable], nrefs: int | str, analysis: Analysis) -> List[Result]:
    """Corpus rows first (system by system, metrics in order), then each group's rows."""
    subsets: List[Tuple[Optional[str], Optional[np.ndarray]]] = [(None, None)]
    if analysis.groups is not None:
        subsets += list(group_rows(analysis.groups).items())
    results = []
    for group, picked in subsets:
        per_metric = [_analyse_table(table, nrefs, analysis, group, picked) for table in tables]
        for system_results in zip(*per_metric):
            results.extend(system_results)
    return results


def _analyse_table(table: MetricTable, nrefs: int | str, analysis: Analysis,
                   group: Optional[str], picked: Optional[np.ndarray]) -> List[Result]:
    signature = f"{analysis.signature_prefix(nrefs)}|{table.source.signature()}"
    score_many = table.source.score_many
    rows = {system: rows if picked is None else rows[picked]
            for system, rows in table.rows.items()}
    baseline_name = next(iter(rows))
    results = []
    for system, system_rows in rows.items():
        total = checked_total(system_rows, table.stat_names,
                              f"{system}, {table.label}" + (f", group {group}" if group else ""))
        result = Result(
            system=system, metric=table.label, score=float(score_many(total[None, :])[0]),
            signature=signature, n=len(system_rows), stats=total, stat_names=table.stat_names,
            higher_is_better=table.source.higher_is_better, group=group,
            baseline=bool(analysis.paired) and system == baseline_name)
        if analysis.paired and system != baseline_name:
            test = paired_bootstrap if analysis.paired == "bs" else approximate_randomization
            paired = test(rows[baseline_name], system_rows, score_many, analysis.paired_n,
                          analysis.seed)
            result.p_value, result.mean, result.ci = paired.p_value, paired.mean, paired.ci
        if analysis.bootstrap_n and result.mean is None:
            result.mean, result.ci = estimate_ci(bootstrap_scores(
                system_rows, score_many, analysis.bootstrap_n, analysis.seed))
        results.append(result)
    return results


@dataclass
class SegmentScores:
    """One metric's score of each segment of one system, and the signature it was
    scored under (sentence-level BLEU uses effective order, as sacrebleu's -sl)."""

    system: str
    metric: str
    signature: str
    scores: np.ndarray


def segment_scores(tables: Sequence[MetricTable], nrefs: int | str) -> List[SegmentScores]:
    """Every segment's own score, for every metric and system (sacrebleu's -sl)."""
    results = []
    for table in tables:
        scorer = table.source.for_sentences()
        signature = f"{Analysis().signature_prefix(nrefs)}|{scorer.signature()}"
        for system, rows in table.rows.items():
            results.append(SegmentScores(system, table.label, signature,
                                         scorer.score_many(rows)))
    return results
