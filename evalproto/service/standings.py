"""Standings: each model's score, interval, rank range and tag scores under one metric on
one dataset, computed from the models' stored rows (evalproto.api.board.standings_of)
in worker processes, and kept by the evaluations they were computed from. Stored rows
never change, so a standing is computed again only when an entry gets new rows.

A reader that waits (the API) gets the standings of exactly the evaluations it asks
for, awaiting a computation under way for another reader. One that does not (the
pages) gets the standings last computed for the dataset and metric, of the models whose
evaluation is the same, while one computation per dataset and metric brings them up to
date in the background.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from sqlalchemy.engine import Engine, Row

from evalproto.api.board import Standing, rows_from_bytes, standings_of
from evalproto.service import results
from evalproto.service.database import reading
from evalproto.service.errors import described
from evalproto.service.workers import Workers
from evalproto.sources.specs import MetricSpec
from evalproto.stats.resampling import DEFAULT_SEED

log = logging.getLogger("evalproto.service")

SAMPLES = 1000
"""Bootstrap resamples behind every interval and test: corpus-score --confidence's and
the report's default, with their default seed."""
KEPT_STANDINGS = 256


@dataclass(frozen=True)
class DatasetText:
    """What the figures need of a dataset: its segment ids, tags and references per
    segment."""

    ids: List[str]
    tags: Optional[List[List[str]]]
    nrefs: int | str


@dataclass(frozen=True)
class Wanted:
    """The standings asked for: of one metric (its stored row) on one dataset, from
    each model's evaluation (by id)."""

    metric: Row
    text: DatasetText
    dataset_id: int
    scored: Dict[str, int] = field(hash=False)

    @property
    def key(self) -> Tuple[int, str, Tuple[Tuple[str, int], ...]]:
        """What the standings are the same for: dataset, signature, evaluations."""
        return self.dataset_id, self.metric.signature, tuple(sorted(self.scored.items()))

    @property
    def slot(self) -> Tuple[int, str]:
        """The dataset and metric, whatever the evaluations."""
        return self.dataset_id, self.metric.signature


Placed = Dict[str, Standing]
"""Each model's standing, by model."""


class Standings:
    """The standings of one database, computed in worker processes (several metrics at
    once), or in the calling thread before `start`."""

    def __init__(self, engine: Engine, samples: int = SAMPLES,
                 seed: Optional[int] = DEFAULT_SEED) -> None:
        """Standings of the database behind `engine`, with `samples` resamples."""
        self.engine = engine
        self.samples = samples
        self.seed = seed
        self.generation = 0  # standings computed so far: a page made before is older
        self._lock = threading.Lock()
        self._kept: OrderedDict[Any, List[Standing]] = OrderedDict()
        self._computing: Dict[Any, Future] = {}
        # each (dataset, signature)'s standings last computed, with {model: evaluation}
        self._latest: Dict[Tuple[int, str], Tuple[Dict[str, int], List[Standing]]] = {}
        self._wanted: OrderedDict[Tuple[int, str], Wanted] = OrderedDict()
        self._refresher: Optional[threading.Thread] = None
        self.workers: Optional[Workers] = None

    def start(self, workers: Workers) -> None:
        """Compute standings in these worker processes from now on."""
        self.workers = workers

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        """function(*args) in a worker process, or here before `start`."""
        workers = self.workers
        if workers is not None:
            return workers.submit_anew(function, *args)
        done: Future = Future()
        done.set_result(function(*args))
        return done

    def of(self, wanted: Sequence[Wanted], wait: bool = True) -> List[Placed]:
        """For each Wanted, every model's standing: computed once per set of
        evaluations (their rows are read only then), the missing ones side by side; a
        computation under way for another reader is awaited. Without `wait`, see the
        module's docstring."""
        if not wait:
            return self._latest_of(wanted)
        mine: List[Tuple[Future, Wanted]] = []
        waiting: Dict[Any, Future] = {}
        with self._lock:
            for item in wanted:
                if item.key in self._kept or item.key in waiting:
                    continue
                if item.key not in self._computing:
                    self._computing[item.key] = Future()
                    mine.append((self._computing[item.key], item))
                waiting[item.key] = self._computing[item.key]
        if mine:
            self._compute(mine)
        for future in waiting.values():
            future.result()
        with self._lock:
            found = [self._kept[item.key] for item in wanted]
        return [{standing.system: standing for standing in standings} for standings in found]

    def _latest_of(self, wanted: Sequence[Wanted]) -> List[Placed]:
        """The standings last computed for each Wanted's dataset and metric, of
        the models whose evaluation is unchanged; the others are computed in the background."""
        found: List[Placed] = []
        later = []
        with self._lock:
            for item in wanted:
                if item.key in self._kept:
                    found.append({standing.system: standing for standing in self._kept[item.key]})
                    continue
                scored, standings = self._latest.get(item.slot, ({}, []))
                found.append({standing.system: standing for standing in standings
                              if scored.get(standing.system) == item.scored.get(standing.system)})
                later.append(item)
        for item in later:
            self._refresh(item)
        return found

    def _refresh(self, item: Wanted) -> None:
        """Compute these standings in the background, on one thread for all: it takes
        the (dataset, metric) asked for longest ago, computes the newest set of
        evaluations asked for it (a newer one replaces the one waiting: sets that came
        and went meanwhile are never computed), and so on until none is left. Readers
        that do not wait cost the server then at most one computation at a time."""
        with self._lock:
            self._wanted[item.slot] = item
            if self._refresher is not None:
                return
            self._refresher = threading.Thread(target=self._refreshing,
                                               name="evalproto-standings", daemon=True)
            self._refresher.start()

    def _refreshing(self) -> None:
        """Compute what readers asked for, one at a time, until nothing is left."""
        while True:
            with self._lock:
                if not self._wanted:
                    self._refresher = None
                    return
                _, item = self._wanted.popitem(last=False)
            try:
                self.of([item])
            except Exception as exc:  # the next read asks again
                log.warning("standings not computed: %s", described(exc))

    def _arguments(self, item: Wanted, stored: Dict[int, bytes]) -> Tuple[Any, ...]:
        """standings_of's arguments for one Wanted."""
        arrays = {model: rows_from_bytes(stored[evaluation], len(item.text.ids))
                  for model, evaluation in sorted(item.scored.items())}
        return (MetricSpec(item.metric.kind, item.metric.spec), arrays, item.text.ids,
                item.text.tags, item.text.nrefs, self.samples, self.seed)

    def _compute(self, mine: Sequence[Tuple[Future, Wanted]]) -> None:
        """Compute these standings (each has its Future, which others may await)."""
        try:
            with reading(self.engine) as connection:
                stored = results.evaluation_rows(connection, [
                    evaluation for _, item in mine for evaluation in item.scored.values()])
            running = [self.submit(standings_of, *self._arguments(item, stored))
                       for _, item in mine]
            computed = []
            for future, (_, item) in zip(running, mine):
                try:
                    computed.append(future.result())
                except BrokenProcessPool:  # a worker died: new workers, and once more
                    log.error("a leaderboard process died; its workers are started anew")
                    computed.append(self.submit(standings_of,
                                               *self._arguments(item, stored)).result())
        except BaseException as exc:  # those waiting for them learn why
            with self._lock:
                for future, item in mine:
                    self._computing.pop(item.key, None)
                    future.set_exception(exc)
            raise
        with self._lock:
            self.generation += 1
            for (future, item), found in zip(mine, computed):
                self._kept[item.key] = found
                self._latest[item.slot] = (dict(item.scored), found)
                self._computing.pop(item.key, None)
                future.set_result(None)
            while len(self._kept) > KEPT_STANDINGS:
                self._kept.popitem(last=False)
