"""Where jobs run: local worker processes (`--jobs N`, started by spawn, killed with the
server that started them, each evaluator they start ended with them), or a Dask
cluster (`--scheduler`). A local worker says which job it runs, so that a worker's
death is charged to the job that caused it (Workers.charged)."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from typing import Any, Callable, Optional, Sequence, Set

from evalproto.base.processes import die_with_parent, ignore_interrupts, keep_groups_after_exit

_KNOWN_WORKERS = 64
"""Worker processes remembered, to tell which of them died of themselves."""

_announce: Optional[Any] = None
"""In a local worker: where it says which job it runs (see Workers.charged)."""
_DEATH_SECONDS = 5.0
"""The longest wait for a broken pool's workers to have ended."""


def _start_worker(parent: int, announce: Any) -> None:
    """Set up a local worker: it dies with its server, leaves Ctrl-C to it, ends
    its evaluators when it ends, and says which job it runs through `announce`."""
    global _announce
    die_with_parent(parent)
    ignore_interrupts()  # Ctrl-C is the server's to act on
    keep_groups_after_exit()  # no evaluator outlives the worker that started it
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
        """Start the local workers, or connect to the Dask cluster."""
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
        """function(*args) on a worker: a Future of its result."""
        if self._client is None:
            assert self._pool is not None
            return self._pool.submit(function, *args)
        done: Future = Future()
        remote = self._client.submit(function, *args, pure=False)

        def finished(remote: Any) -> None:
            """Pass the Dask task's result or failure to the Future."""
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
        own doing. A job that no worker said it ran never started (it waited in the
        pool's queue), and a worker still alive did not die. All of them where none
        can be told (every worker ended by SIGTERM)."""
        while self._announced is not None and self._announced.poll():
            job, pid = self._announced.recv_bytes().split()
            self._ran_in[int(job)] = int(pid)
            while len(self._ran_in) > _KNOWN_WORKERS:
                self._ran_in.popitem(last=False)
        charged = set()
        for job in jobs:
            worker = self._known.get(self._ran_in.get(job, 0))
            if worker is None:
                continue
            if _exit_code(worker) not in (None, -signal.SIGTERM):  # None: it did not die
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
        """Run the actions asked of the keeper thread, one at a time."""
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


def _exit_code(worker: Any) -> Optional[int]:
    """A broken pool's worker's exit code, once it has ended (None if it lives on).
    The pool's own thread reaps its workers too: where it reaped one first, the
    worker's code comes a moment after our wait for it found it gone."""
    deadline = time.monotonic() + _DEATH_SECONDS
    worker.join(timeout=_DEATH_SECONDS)
    while worker.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    code: Optional[int] = worker.exitcode
    return code
