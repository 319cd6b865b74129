"""Scoring jobs: a queue in the database, and a dispatcher that runs them.

A submission queues one job per metric of its task; `add-metric` queues one per stored
submission. The dispatcher (a thread of the server) takes queued jobs while it has free
workers, sends each to a worker (a local process, `--jobs N`, or a Dask worker,
`--scheduler`), and writes what comes back: the evaluation's rows and the job's end in
one transaction, so that a crash leaves either both or neither. A job that was running
when its server died is queued again, at the next start or by any other server on the
database (each server beats its heart in the database while it lives); scoring it
again writes nothing twice (an evaluation is unique per predictions, dataset and
signature).
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from sqlalchemy.engine import Engine, Row

from evalproto.api.board import Ran, Scored, rows_to_bytes, run_on_dataset, score_predictions
from evalproto.base.errors import EvalprotoError
from evalproto.service import jobstore, results, store
from evalproto.service.database import reading, writing
from evalproto.service.errors import described
from evalproto.service.workers import Workers
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import MetricSpec

log = logging.getLogger("evalproto.service")

IDLE_POLL = 1.0
"""Seconds between looks at the queue when nothing happens here (another server on the
same database may queue jobs)."""
BEAT_SECONDS = 5.0
"""Seconds between heartbeats (see schema.servers)."""
MAX_DEATHS = 3
"""Failures of its own doing a job may cause (a worker that dies of it, a send that
fails) before it fails: one that kills every worker it runs in must end, while a job
merely running beside it, or cut off by a server's restart, is charged nothing."""
class Dispatcher:
    """Takes queued jobs while a worker is free, and records their ends."""

    def __init__(self, engine: Engine, workers: Workers,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 settled: Optional[Callable[[Set[str]], None]] = None) -> None:
        """`settled(tasks)` is called, on a thread of its own, when the queue has
        emptied after jobs of these tasks ended (the server computes their leaderboards
        then, so that readers find them ready)."""
        self.engine = engine
        self.workers = workers
        self.timeout = timeout
        self._settled = settled
        self._changed: Set[str] = set()
        self._settling: Optional[threading.Thread] = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._running: Dict[Future, jobstore.Job | jobstore.Run] = {}
        self._datasets: OrderedDict[int, bytes] = OrderedDict()
        self._thread = threading.Thread(target=self._loop, name="evalproto-jobs", daemon=True)
        self.server = secrets.token_hex(16)
        self.host = socket.gethostname()
        self._beaten = 0.0

    def start(self) -> None:
        """Register this server, take over the jobs of dead ones, and start taking
        jobs."""
        with writing(self.engine) as connection:
            jobstore.register_server(connection, self.server, self.host, os.getpid())
        self._look_after_orphans()
        self._thread.start()

    def _look_after_orphans(self) -> None:
        """Beat this server's heart, and queue again the jobs of servers that died."""
        with writing(self.engine) as connection:
            jobstore.beat(connection, self.server)
            again = jobstore.requeue_orphans(connection, self._alive)
        if again:
            log.info("%d jobs cut off by a server that stopped are queued again", again)
        self._beaten = time.monotonic()

    def _alive(self, server: Row) -> bool:
        """Whether a server that runs jobs lives, as far as this machine can tell (one
        on another machine is gone when its heart stops)."""
        if server.server == self.server or server.host != self.host:
            return True
        if server.pid == os.getpid():
            return False  # this process's pid, from before a restart
        try:
            os.kill(server.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def wake(self) -> None:
        """Look at the queue now (jobs were queued)."""
        self._wake.set()

    def stop(self) -> None:
        """Stop taking jobs; the running ones are queued again, for the next start (or
        another server) to run."""
        self._stop.set()
        self._wake.set()
        self._thread.join()
        with writing(self.engine) as connection:
            if self._running:
                jobstore.requeue(connection, [job.id for job in self._running.values()],
                              self.server)
            jobstore.unregister_server(connection, self.server)
        self._running.clear()

    def _loop(self) -> None:
        """Beat, record ended jobs, take new ones, until stopped; a database away
        for a moment is tried again."""
        while not self._stop.is_set():
            try:
                if time.monotonic() - self._beaten > BEAT_SECONDS:
                    self._look_after_orphans()
                self._record_ends()
                self._take_jobs()
                self._settle()
            except Exception as exc:  # the database went away for a moment: try again
                log.error("jobs: %s", described(exc))
                self._stop.wait(IDLE_POLL)
            self._wake.wait(IDLE_POLL)
            self._wake.clear()

    def _settle(self) -> None:
        """Once nothing runs here, hand the tasks whose jobs ended to `settled`."""
        if self._running or not self._changed or self._settled is None or (
                self._settling is not None and self._settling.is_alive()):
            return
        tasks, self._changed = self._changed, set()
        self._settling = threading.Thread(target=self._settled, args=(tasks,),
                                          name="evalproto-settle", daemon=True)
        self._settling.start()

    def _take_jobs(self) -> None:
        """Claim queued jobs while a worker is free, and send each to one."""
        while len(self._running) < self.workers.capacity and not self._stop.is_set():
            with writing(self.engine) as connection:
                job = jobstore.claim(connection, self.server)
            if job is None:
                return
            try:
                self._send(job)
            except Exception as exc:  # the database failed us: the job is not left running
                self._release(job, exc)
                raise

    def _send(self, job: jobstore.Job | jobstore.Run) -> None:
        """Send a claimed job to a worker (or end it, if its scores are there)."""
        if isinstance(job, jobstore.Run):
            with reading(self.engine) as connection:
                dataset = self._dataset(connection, job.dataset_id)
            self._start(job, run_on_dataset, job.command, (f"{job.dataset}.jsonl", dataset),
                        *_keys(job), job.timeout)
            return
        with reading(self.engine) as connection:
            scored_before = results.evaluations_of(
                connection, job.dataset_id, [job.predictions_id], job.signature)
            if not scored_before:
                dataset = self._dataset(connection, job.dataset_id)
                predictions = results.predictions_data(connection, job.predictions_id)
        if scored_before:  # the same predictions, dataset and signature: nothing to do
            with writing(self.engine) as connection:
                jobstore.finish(connection, job)
            return
        self._start(job, score_predictions, MetricSpec(job.kind, job.spec),
                    (f"{job.dataset}.jsonl", dataset),
                    (f"{job.model}.predictions.jsonl", predictions), self.timeout)

    def _start(self, job: jobstore.Job | jobstore.Run, function: Callable[..., Any],
               *args: Any) -> None:
        """Start function(*args), the job's work, on a worker."""
        try:
            future = self.workers.submit_job(job.id, function, *args)
        except Exception as exc:  # no worker to take it (a pool broken meanwhile)
            future = Future()
            future.set_exception(exc)
        self._running[future] = job
        future.add_done_callback(lambda _: self._wake.set())

    def _release(self, job: jobstore.Job | jobstore.Run, exc: Exception) -> None:
        """A claimed job that could not be sent: charged and queued again, or failed on
        its MAX_DEATHS-th such failure (a fault that does not pass); if the database
        cannot be written either, a server that outlives this one queues it again."""
        try:
            with writing(self.engine) as connection:
                if job.attempts + 1 < MAX_DEATHS:
                    jobstore.charge(connection, job)
                else:
                    jobstore.fail(connection, job, f"it could not be sent to a worker on "
                                                f"{job.attempts + 1} attempts "
                                                f"({described(exc)})", charged=True)
        except Exception as again:
            log.error("job %d: it could not be queued again: %s", job.id, described(again))

    def _dataset(self, connection: Any, dataset_id: int) -> bytes:
        """A dataset's bytes, from the few kept at hand (jobs come in runs)."""
        if dataset_id not in self._datasets:
            self._datasets[dataset_id] = store.dataset_data(connection, dataset_id)
            while len(self._datasets) > 4:
                self._datasets.popitem(last=False)
        self._datasets.move_to_end(dataset_id)
        return self._datasets[dataset_id]

    def _record_ends(self) -> None:
        """Write the ends of the jobs that ended: their evaluations, or their
        failures; a worker's death is charged to the jobs that caused it (Workers.charged)."""
        ended = [future for future in self._running if future.done()]
        cut_off = [self._running[future].id for future in ended
                   if isinstance(future.exception(), BrokenProcessPool)]
        charged = self.workers.charged(cut_off) if cut_off else set()
        for future in ended:
            job = self._running[future]
            outcome = _outcome(future)
            died = job.id in cut_off
            try:
                with writing(self.engine) as connection:
                    if died and job.id not in charged:  # another job's doing
                        jobstore.requeue(connection, [job.id], self.server)
                        log.warning("job %d: a worker process died beside it; it is queued "
                                    "again", job.id)
                    elif died and job.attempts + 1 < MAX_DEATHS:
                        jobstore.charge(connection, job)
                        log.warning("job %d: the worker process running it died; it is "
                                    "queued again", job.id)
                    elif died:
                        jobstore.fail(connection, job, f"the worker process running it died "
                                                    f"on each of its {job.attempts + 1} "
                                                    f"attempts (out of memory? a metric that "
                                                    f"crashes?)", charged=True)
                    elif isinstance(outcome, str):
                        jobstore.fail(connection, job, outcome)
                    elif isinstance(job, jobstore.Run):
                        assert isinstance(outcome, Ran)
                        jobstore.finish_run(connection, job, outcome.predictions,
                                            outcome.throughput, outcome.memory)
                    else:
                        assert isinstance(outcome, Scored)
                        _record(connection, job, outcome)
                self._changed.add(job.task)
            except Exception as exc:  # a job is never left running for good
                log.error("job %d: its end could not be written: %s", job.id, described(exc))
                with writing(self.engine) as connection:  # if this fails: next time
                    jobstore.fail(connection, job, f"its end could not be written "
                                                f"({described(exc)})")
            del self._running[future]
        if cut_off:
            self.workers.restart(only_broken=True)


def _outcome(future: Future) -> Scored | Ran | str:
    """What a finished job gave: its rows (a run: its predictions), or why it failed."""
    try:
        return future.result()
    except BrokenProcessPool:
        return "the worker process running it died (out of memory?)"
    except EvalprotoError as exc:
        return str(exc)
    except Exception as exc:  # a bug in a metric or here: the job says what
        return f"internal error ({described(exc)})"


def _record(connection: Any, job: jobstore.Job, scored: Scored) -> None:
    """A job's evaluation and its end, in the caller's transaction."""
    if scored.signature != job.signature:
        jobstore.fail(connection, job, f"the metric's signature is now {scored.signature}, but "
                   f"the task registered it as {job.signature}: its scores would not be "
                   f"comparable (was evalproto upgraded?)")
        return
    score: Optional[float] = scored.score if math.isfinite(scored.score) else None
    jobstore.finish(connection, job, rows_to_bytes(scored.rows), len(scored.rows), score,
                 "; ".join(scored.warnings) or None)



def _keys(run: jobstore.Run) -> Tuple[List[str], List[str]]:
    """A run's task's input and output keys."""
    return (json.loads(run.input_keys) if run.input_keys else [],
            json.loads(run.output_keys) if run.output_keys else [])
