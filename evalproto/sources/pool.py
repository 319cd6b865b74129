"""A pool of N copies of one metric, for -j/--jobs on one machine.

An in-process evaluator runs in N worker processes (each builds its own from the
spec); an external evaluator runs as N subprocesses, each fed by its own thread.
Items are split into a few contiguous chunks per copy, handed to whichever copy is
free (segments differ much in cost, so N equal halves would leave copies idle), and
the rows are joined in order, so the result is the same as with one copy. Scores
(EVAL) come from the first copy.

The worker processes are a concurrent.futures pool, not multiprocessing.Pool: a worker
that dies (killed, out of memory, or a script without a main guard, whose copies fail
as they import it) breaks the run with an error, where multiprocessing.Pool waits for
its part forever and starts new workers without end.
"""

from __future__ import annotations

import queue
import sys
from contextlib import ExitStack
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.compiled import one_kernel_thread
from evalproto.base.errors import EvalprotoError, EvaluatorError, SetupError
from evalproto.base.items import Item
from evalproto.base.processes import ignore_interrupts, most_copies, signals_held_for_workers
from evalproto.sources.base import StatsSource
from evalproto.sources.process import ClosedOnExit
from evalproto.sources.specs import MetricSpec

_WORKER_SOURCE: Optional[StatsSource] = None
_CHUNKS_PER_COPY = 4
_DESCRIPTIONS = ("name", "score_name", "extra_decimals", "details", "verbose_score",
                 "input_warnings", "mean_of_rows", "strips_whitespace")
"""What a copy says of its scores and its input beside them: the pool says what the
first copy says."""


def _start_worker(spec: MetricSpec, all_started: Any) -> None:
    """A worker's start: its own copy of the metric, and then a wait at the barrier
    `all_started` until every worker has started (see EvaluatorPool._start)."""
    global _WORKER_SOURCE
    ignore_interrupts()
    one_kernel_thread()  # the copies are the threads
    _WORKER_SOURCE = spec.build(None)
    all_started.wait()


def _started() -> None:
    """The task that each worker's start is awaited by."""


def _worker_stats(part: Tuple[int, Sequence[Item]]) -> np.ndarray:
    assert _WORKER_SOURCE is not None, "the worker was started by _start_worker"
    return _part_stats(_WORKER_SOURCE, part)


def _part_stats(source: StatsSource, part: Tuple[int, Sequence[Item]]) -> np.ndarray:
    """The rows of the items from `start` on; a failure names its item among all."""
    start, items = part
    try:
        return source.stats_many(items)
    except EvalprotoError as exc:
        raise exc.shifted(start) from None


def contiguous_ranges(count: int, parts: int) -> List[Tuple[int, int]]:
    """At most `parts` ranges [start, stop) of nearly equal size that cover 0..count in
    order, none of them empty."""
    size = max(1, -(-count // max(1, parts)))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def chunks(items: Sequence[Item], parts: int) -> List[Tuple[int, Sequence[Item]]]:
    """`parts` contiguous slices of nearly equal size (empty ones left out), each with
    the index of its first item."""
    return [(start, items[start:stop]) for start, stop in contiguous_ranges(len(items), parts)]


class EvaluatorPool(ClosedOnExit):
    """N copies of a metric behind the interface of one."""

    def __init__(self, spec: MetricSpec, jobs: int, timeout: Optional[float]) -> None:
        if jobs > most_copies():
            raise SetupError(f"`jobs` is the number of copies to run on this machine: at most "
                             f"{most_copies()} here (4 a CPU), not {jobs}")
        self.jobs = jobs
        self._copies: List[Any] = []
        self._processes: Optional[Any] = None  # a ProcessPoolExecutor of in-process copies
        try:  # what has started is ended if the rest fails or is interrupted
            self._start(spec, timeout)
            self._describe(self._copies[0])
        except BaseException:
            self.terminate()
            raise

    def _start(self, spec: MetricSpec, timeout: Optional[float]) -> None:
        self._copies.append(spec.build(timeout, copy=True))
        if not spec.in_process:
            for _ in range(self.jobs - 1):
                self._copies.append(spec.build(timeout, copy=True))
            return
        # Spawned workers build their own: nothing unpicklable crosses.
        import multiprocessing  # here: -j 1, the usual run, needs no pool
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("spawn")
        self._processes = ProcessPoolExecutor(
            self.jobs, mp_context=context, initializer=_start_worker,
            initargs=(spec, context.Barrier(self.jobs)))
        # The executor starts a worker for each task it is given while none is idle; no
        # worker is idle before all have passed the barrier, so these start them all,
        # here: in the main thread, as signals_held_for_workers needs (corpus_rows later
        # hands out parts from a thread of its own).
        with signals_held_for_workers():  # one that comes is raised once they have started
            starting = [self._processes.submit(_started) for _ in range(self.jobs)]
        _results(starting)

    def _describe(self, primary: Any) -> None:
        """Say what the first copy says of its statistics and scores."""
        self.stat_names: Optional[Tuple[str, ...]] = primary.stat_names
        self.higher_is_better: bool = primary.higher_is_better
        self.signature = primary.signature
        self.score_many = primary.score_many
        self.for_sentences = primary.for_sentences
        if hasattr(primary, "pairwise_scores"):  # a compiled kernel in this process
            self.pairwise_scores = primary.pairwise_scores
        self.resample_dtype = getattr(primary, "resample_dtype", np.float64)
        for attribute in _DESCRIPTIONS:  # what reports show beside the score
            if hasattr(primary, attribute):
                setattr(self, attribute, getattr(primary, attribute))

    def stats_many(self, items: Sequence[Item]) -> np.ndarray:
        parts = chunks(list(items), self.jobs * _CHUNKS_PER_COPY)
        if self._processes is not None:
            rows = self._process_stats(parts)
        else:
            rows = self._threaded_stats(parts)
        if not rows:
            return self._copies[0].stats_many([])
        self.stat_names = self._copies[0].stat_names or self.stat_names
        return np.concatenate(rows)

    def _process_stats(self, parts: List[Tuple[int, Sequence[Item]]]) -> List[np.ndarray]:
        """Each part's rows from the worker processes."""
        from concurrent.futures.process import BrokenProcessPool

        assert self._processes is not None, "stats_many asks only where there is a pool"
        try:
            running = [self._processes.submit(_worker_stats, part) for part in parts]
        except BrokenProcessPool:  # a worker died since the last parts
            raise EvaluatorError(_broken()) from None
        return _results(running)

    def _threaded_stats(self, parts: List[Tuple[int, Sequence[Item]]]) -> List[np.ndarray]:
        """Each external copy, in its own thread, takes the next part until none is left."""
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for numbered in enumerate(parts):
            todo.put(numbered)
        rows: List[Any] = [None] * len(parts)

        def work(copy: Any) -> None:
            while True:
                try:
                    number, part = todo.get_nowait()
                except queue.Empty:
                    return
                rows[number] = _part_stats(copy, part)

        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        threads = ThreadPoolExecutor(len(self._copies))
        try:  # the first failure is raised at once, not after the copies before it
            running = [threads.submit(work, copy) for copy in self._copies]
            finished, _ = wait(running, return_when=FIRST_EXCEPTION)
            for done in [*[done for done in finished if done.exception()], *running]:
                done.result()
        finally:
            # Not waiting for the threads: after Ctrl-C or SIGTERM they may wait for
            # replies that never come (--timeout 0) until terminate() ends the copies.
            threads.shutdown(wait=False)
        return rows

    def close(self) -> None:
        if self._processes is not None:
            self._processes.shutdown()
        for copy in self._copies:
            copy.close()

    def terminate(self) -> None:
        if self._processes is not None:
            _end_workers(self._processes)
        for copy in self._copies:
            getattr(copy, "terminate", copy.close)()


def _results(running: List[Any]) -> List[Any]:
    """The results of the worker processes' tasks, in order: the first failure in order
    is raised (as one copy would raise it), and a worker's death as an EvaluatorError."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return [task.result() for task in running]
    except BrokenProcessPool:
        raise EvaluatorError(_broken()) from None
    finally:
        for task in running:
            task.cancel()


def _broken() -> str:
    """What to say of a worker that died: from Python (not the `evalproto` command), the
    usual cause too."""
    said = "a -j worker process ended before it gave its rows (killed, out of memory, or crashed)"
    if "evalproto.cli.main" in sys.modules:
        return said
    return (f"{said}; from a script, `jobs` > 1 starts workers that import the script, so "
            f"its work must be under `if __name__ == \"__main__\":`")


def _end_workers(executor: Any) -> None:
    """Stop a ProcessPoolExecutor's workers now, at their current part (shutdown alone
    lets each finish it: minutes of a large corpus after Ctrl-C)."""
    if sys.version_info >= (3, 14):
        executor.terminate_workers()
        return
    workers = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join()


def open_source(spec: MetricSpec, stack: ExitStack, timeout: Optional[float],
                jobs: int = 1) -> StatsSource:
    """The spec built, or a pool of `jobs` copies of it; processes are closed (and
    checked) when `stack` closes."""
    if jobs > 1:
        return stack.enter_context(EvaluatorPool(spec, jobs, timeout))
    source = spec.build(timeout)
    stack.enter_context(source)
    return source
