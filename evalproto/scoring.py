"""From sources of statistics to corpus results: stats rows per system, summed, scored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from evalproto.evaluator import Item
from evalproto.readers import Corpus


class StatsSource(Protocol):
    """What an in-process Evaluator and an EvaluatorProcess have in common."""

    stat_names: Optional[Tuple[str, ...]]

    @property
    def higher_is_better(self) -> bool: ...

    def signature(self, nrefs: Optional[int | str] = None) -> str: ...

    def stats_many(self, items: Sequence[Item]) -> np.ndarray: ...

    def score(self, vector: Sequence[float]) -> float: ...


@dataclass
class Result:
    """One metric's corpus score for one system."""

    system: str
    metric: str
    score: float
    signature: str
    n: int
    stats: np.ndarray
    stat_names: Tuple[str, ...]
    higher_is_better: bool


def system_rows(source: StatsSource, corpus: Corpus) -> Dict[str, np.ndarray]:
    """The stats rows of every system, computed segment by segment across systems so
    that an evaluator's reference cache is hit by each system in turn."""
    systems = list(corpus.systems)
    items = [(refs, corpus.systems[system][i])
             for i, refs in enumerate(corpus.refs) for system in systems]
    rows = source.stats_many(items)
    rows = rows.reshape(len(corpus.refs), len(systems), rows.shape[1])
    return {system: rows[:, j, :] for j, system in enumerate(systems)}


def score_corpus(corpus: Corpus, metrics: Sequence[Tuple[str, StatsSource]]) -> List[Result]:
    """Results system by system, each system's metrics in the order given."""
    per_metric = []
    for label, source in metrics:
        signature = source.signature(nrefs=corpus.nrefs)
        for system, rows in system_rows(source, corpus).items():
            total = rows.sum(axis=0)
            per_metric.append(Result(
                system=system, metric=label, score=source.score(total), signature=signature,
                n=len(rows), stats=total, stat_names=tuple(source.stat_names or ()),
                higher_is_better=source.higher_is_better))
    return sorted(per_metric, key=lambda result: list(corpus.systems).index(result.system))
