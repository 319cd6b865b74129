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

import logging
import math
import os
import queue
import secrets
import signal
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from typing import Any, Callable, Dict, Optional, Sequence, Set

from sqlalchemy.engine import Engine, Row

from evalproto.api.board import Scored, rows_to_bytes, score_predictions
from evalproto.base.errors import EvalprotoError
from evalproto.base.processes import die_with_parent, ignore_interrupts, keep_groups_after_exit
from evalproto.service import store
from evalproto.service.errors import described
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import MetricSpec

log = logging.getLogger("evalproto.service")

IDLE_POLL = 1.0
"""Seconds between looks at the queue when nothing happens here (another server on the
same database may queue jobs)."""
BEAT_SECONDS = 5.0
"""Seconds between heartbeats (see store.servers)."""
MAX_DEATHS = 3
"""Failures of its own doing a job may cause (a worker that dies of it, a send that
fails) before it fails: one that kills every worker it runs in must end, while a job
merely running beside it, or cut off by a server's restart, is charged nothing."""
_KNOWN_WORKERS = 64
"""Worker processes remembered, to tell which of them died of themselves."""

_announce: Optional[Any] = None
"""In a local worker: where it says which job it runs (see Workers.charged)."""
_DEATH_SECONDS = 5.0
"""The longest wait for a broken pool's workers to have ended."""


def _start_worker(parent: int, announce: Any) -> None:
    global _announce
    die_with_parent(parent)
    ignore_interrupts()  # Ctrl-C is the server's to act on
    _announce = announce
    import evalproto.api.board  # noqa: F401  (loaded now, not on the first job)


def _run_job(job: int, function: Callable[..., Any], *args: Any) -> Any:
    """function(*args) in a local worker, once it has said that it runs `job`: one
    short write to a pipe of several writers, so whole and never held by a lock that a
    worker killed mid-way would keep."""
    assert _announce is not None
    _announce.send_bytes(f"{job} {os.getpid()}".encode("ascii"))
    return function(*args)


class Workers:
    """Where jobs run: `jobs` local worker processes, or the Dask cluster at
    `scheduler` (an address, or local[:N])."""

    def __init__(self, jobs: int, scheduler: Optional[str] = None) -> None:
        keep_groups_after_exit()  # no evaluator outlives the worker, or server, that ran it
        self._stack = ExitStack()
        self._client: Any = None
        self._pool: Optional[ProcessPoolExecutor] = None
        self._restarting = threading.Lock()
        self._keeper: Optional[queue.Queue] = None
        self._known: OrderedDict[int, Any] = OrderedDict()  # worker processes by pid
        self._ran_in: OrderedDict[int, int] = OrderedDict()  # each job's worker's pid
        self._announced: Any = None  # the pipe's ends: what workers say they run
        self._announce: Any = None
        self.jobs = jobs
        if scheduler:
            from evalproto.sources.dask import connect

            self._client = self._stack.enter_context(connect(scheduler))
            self.capacity = max(jobs, len(self._client.scheduler_info()["workers"]))
        else:
            self.capacity = jobs
            self._start_pool()

    def _start_pool(self) -> None:
        """Worker processes, started now (from the thread that starts the server, whose
        end is the process's: see die_with_parent)."""
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        if self._announced is None:  # one pipe for every pool's workers, held open here
            self._announced, self._announce = context.Pipe(duplex=False)
        self._pool = ProcessPoolExecutor(self.jobs, context, initializer=_start_worker,
                                         initargs=(os.getpid(), self._announce))
        for _ in range(self.jobs):  # each started here, by the submission it takes
            self._pool.submit(os.getpid)
        self._known.update(getattr(self._pool, "_processes", None) or {})
        while len(self._known) > _KNOWN_WORKERS:
            self._known.popitem(last=False)

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        if self._client is None:
            assert self._pool is not None
            return self._pool.submit(function, *args)
        done: Future = Future()
        remote = self._client.submit(function, *args, pure=False)

        def finished(remote: Any) -> None:
            try:
                done.set_result(remote.result())
            except BaseException as exc:  # the task's failure, reported by its job
                done.set_exception(exc)

        remote.add_done_callback(finished)
        return done

    def submit_job(self, job: int, function: Callable[..., Any], *args: Any) -> Future:
        """`submit_anew` of job `job`'s work; a local worker says first that it runs it."""
        if self._client is not None:  # Dask tells a task that kills its workers itself
            return self.submit_anew(function, *args)
        return self.submit_anew(_run_job, job, function, *args)

    def charged(self, jobs: Sequence[int]) -> Set[int]:
        """Of these jobs, cut off by a worker's death (the pool then ends its other
        workers with SIGTERM), those that ran in a worker that died of itself: their
        own doing. All of them where that cannot be told (a worker that ended before
        it said which job it ran, or every worker ended by SIGTERM)."""
        while self._announced is not None and self._announced.poll():
            job, pid = self._announced.recv_bytes().split()
            self._ran_in[int(job)] = int(pid)
            while len(self._ran_in) > _KNOWN_WORKERS:
                self._ran_in.popitem(last=False)
        charged = set()
        for job in jobs:
            worker = self._known.get(self._ran_in.get(job, 0))
            if worker is None:
                charged.add(job)
                continue
            worker.join(timeout=_DEATH_SECONDS)  # ended by the pool, or on its way
            if worker.exitcode != -signal.SIGTERM:
                charged.add(job)
        return charged or set(jobs)

    def submit_anew(self, function: Callable[..., Any], *args: Any) -> Future:
        """`submit`, on a new pool if the pool was broken (a worker died)."""
        try:
            return self.submit(function, *args)
        except BrokenProcessPool:
            self.restart(only_broken=True)
            return self.submit(function, *args)

    def restart(self, only_broken: bool = False) -> None:
        """New local workers after one died (the pool is then broken); with
        `only_broken`, only if the pool is broken still (another thread may have
        restarted it meanwhile)."""
        with self._restarting:
            if self._pool is not None and (not only_broken
                                           or getattr(self._pool, "_broken", False)):
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._in_keeper(self._start_pool)

    def _in_keeper(self, action: Callable[[], None]) -> None:
        """Run `action` in a thread that lives as long as the server: a worker is killed
        when the thread that started it ends (die_with_parent), and the thread asking for
        new workers may be a request's, which ends when idle."""
        if self._keeper is None:
            self._keeper = queue.Queue()
            threading.Thread(target=self._keep, args=(self._keeper,), daemon=True,
                             name="evalproto-workers").start()
        done: Future = Future()
        self._keeper.put((action, done))
        done.result()

    @staticmethod
    def _keep(requests: queue.Queue) -> None:
        while True:
            action, done = requests.get()
            try:
                action()
                done.set_result(None)
            except BaseException as exc:  # the caller learns of it
                done.set_exception(exc)

    def close(self) -> None:
        """End the workers now, busy or not: the dispatcher has queued their jobs again."""
        if self._pool is not None:
            workers = list((getattr(self._pool, "_processes", None) or {}).values())
            self._pool.shutdown(wait=False, cancel_futures=True)
            for worker in workers:
                worker.kill()
                worker.join()
        for end in (self._announced, self._announce):
            if end is not None:
                end.close()
        self._stack.close()


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
        self._running: Dict[Future, store.Job] = {}
        self._datasets: OrderedDict[int, bytes] = OrderedDict()
        self._thread = threading.Thread(target=self._loop, name="evalproto-jobs", daemon=True)
        self.server = secrets.token_hex(16)
        self.host = socket.gethostname()
        self._beaten = 0.0

    def start(self) -> None:
        with store.writing(self.engine) as connection:
            store.register_server(connection, self.server, self.host, os.getpid())
        self._look_after_orphans()
        self._thread.start()

    def _look_after_orphans(self) -> None:
        """Beat this server's heart, and queue again the jobs of servers that died."""
        with store.writing(self.engine) as connection:
            store.beat(connection, self.server)
            again = store.requeue_orphans(connection, self._alive)
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
        with store.writing(self.engine) as connection:
            if self._running:
                store.requeue(connection, [job.id for job in self._running.values()],
                              self.server)
            store.unregister_server(connection, self.server)
        self._running.clear()

    def _loop(self) -> None:
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
        while len(self._running) < self.workers.capacity and not self._stop.is_set():
            with store.writing(self.engine) as connection:
                job = store.claim(connection, self.server)
            if job is None:
                return
            try:
                self._send(job)
            except Exception as exc:  # the database failed us: the job is not left running
                self._release(job, exc)
                raise

    def _send(self, job: store.Job) -> None:
        """Send a claimed job to a worker (or end it, if its scores are there)."""
        with store.reading(self.engine) as connection:
            scored_before = store.evaluations_of(
                connection, job.dataset_id, [job.predictions_id], job.signature)
            if not scored_before:
                dataset = self._dataset(connection, job.dataset_id)
                predictions = store.predictions_data(connection, job.predictions_id)
        if scored_before:  # the same predictions, dataset and signature: nothing to do
            with store.writing(self.engine) as connection:
                store.finish(connection, job)
            return
        spec = MetricSpec(job.kind, job.spec)
        try:
            future = self.workers.submit_job(
                job.id, score_predictions, spec, (f"{job.dataset}.jsonl", dataset),
                (f"{job.model}.predictions.jsonl", predictions), self.timeout)
        except Exception as exc:  # no worker to take it (a pool broken meanwhile)
            future = Future()
            future.set_exception(exc)
        self._running[future] = job
        future.add_done_callback(lambda _: self._wake.set())

    def _release(self, job: store.Job, exc: Exception) -> None:
        """A claimed job that could not be sent: charged and queued again, or failed on
        its MAX_DEATHS-th such failure (a fault that does not pass); if the database
        cannot be written either, a server that outlives this one queues it again."""
        try:
            with store.writing(self.engine) as connection:
                if job.attempts + 1 < MAX_DEATHS:
                    store.charge(connection, job)
                else:
                    store.fail(connection, job, f"it could not be sent to a worker on "
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
        ended = [future for future in self._running if future.done()]
        cut_off = [self._running[future].id for future in ended
                   if isinstance(future.exception(), BrokenProcessPool)]
        charged = self.workers.charged(cut_off) if cut_off else set()
        for future in ended:
            job = self._running[future]
            outcome = _outcome(future)
            died = job.id in cut_off
            try:
                with store.writing(self.engine) as connection:
                    if died and job.id not in charged:  # another job's doing
                        store.requeue(connection, [job.id], self.server)
                        log.warning("job %d: a worker process died beside it; it is queued "
                                    "again", job.id)
                    elif died and job.attempts + 1 < MAX_DEATHS:
                        store.charge(connection, job)
                        log.warning("job %d: the worker process running it died; it is "
                                    "queued again", job.id)
                    elif died:
                        store.fail(connection, job, f"the worker process running it died "
                                                    f"on each of its {job.attempts + 1} "
                                                    f"attempts (out of memory? a metric that "
                                                    f"crashes?)", charged=True)
                    elif isinstance(outcome, str):
                        store.fail(connection, job, outcome)
                    else:
                        _record(connection, job, outcome)
                self._changed.add(job.task)
            except Exception as exc:  # a job is never left running for good
                log.error("job %d: its end could not be written: %s", job.id, described(exc))
                with store.writing(self.engine) as connection:  # if this fails: next time
                    store.fail(connection, job, f"its end could not be written "
                                                f"({described(exc)})")
            del self._running[future]
        if cut_off:
            self.workers.restart(only_broken=True)


def _outcome(future: Future) -> Scored | str:
    """What a finished job gave: its rows, or why it failed."""
    try:
        return future.result()
    except BrokenProcessPool:
        return "the worker process running it died (out of memory?)"
    except EvalprotoError as exc:
        return str(exc)
    except Exception as exc:  # a bug in a metric or here: the job says what
        return f"internal error ({described(exc)})"


def _record(connection: Any, job: store.Job, scored: Scored) -> None:
    """A job's evaluation and its end, in the caller's transaction."""
    if scored.signature != job.signature:
        store.fail(connection, job, f"the metric's signature is now {scored.signature}, but "
                   f"the task registered it as {job.signature}: its scores would not be "
                   f"comparable (was evalproto upgraded?)")
        return
    score: Optional[float] = scored.score if math.isfinite(scored.score) else None
    store.finish(connection, job, rows_to_bytes(scored.rows), len(scored.rows), score,
                 "; ".join(scored.warnings) or None)

