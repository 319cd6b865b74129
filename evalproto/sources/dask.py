"""Scoring on a Dask cluster with the same evaluators and the same numbers.

Workers read their own line ranges of the input files (which must be reachable from
them: a shared filesystem or URLs they can open) and send back only stats rows; the
client joins the rows in order and runs the same reductions as a local run. Scores
are computed on a worker too, so an external evaluator (-e) is started on workers
only, once per worker process, and reused by every task that worker runs.

Dask is optional: `pip install 'evalproto[dask]'`.
"""

from __future__ import annotations

import logging
import re
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.compiled import one_kernel_thread
from evalproto.base.errors import EvalprotoError, SetupError
from evalproto.base.items import Item
from evalproto.base.numerals import is_whole_number
from evalproto.base.processes import KEEP_GROUPS, signals_held_for_workers
from evalproto.readers.text import (
    check_inputs,
    check_line_counts,
    count_lines,
    empty_file,
    is_plain,
    line_starts,
    read_bytes,
    read_line_range,
)
from evalproto.sources.base import StatsSource, Stripped, corpus_rows
from evalproto.sources.pool import contiguous_ranges
from evalproto.sources.process import EvaluatorProcess, checked_timeout
from evalproto.sources.specs import IN_PROCESS, MetricSpec

ADDRESS = re.compile(r"([a-z][a-z0-9+.-]*://)?[^\s:/]+:[0-9]+/?\Z", re.IGNORECASE)
"""A scheduler address as Dask takes it: tcp://host:8786, host:8786, tls://host:8786."""
PARTITIONS_PER_WORKER = 4
CONNECT_TIMEOUT = 10

# -- on the workers -------------------------------------------------------------------

_SOURCES: Dict[MetricSpec, StatsSource] = {}


def _source(spec: MetricSpec, timeout: Optional[float]) -> StatsSource:
    """This worker's evaluator for a spec, started on first use and then reused; the
    timeout is the current run's (a setting of the client, not of the evaluator). A
    worker's kernels, and its -e evaluators', run on one thread each: its threads
    (--nthreads) and the other workers are the parallelism."""
    if spec not in _SOURCES:
        if _in_worker():
            one_kernel_thread()
        _SOURCES[spec] = spec.build(timeout)
    source = _SOURCES[spec]
    if isinstance(source, EvaluatorProcess):
        source.timeout = checked_timeout(timeout)
    return source


def _in_worker() -> bool:
    """Whether this runs in a Dask worker (not in the client: bag_stats with Dask's own
    schedulers calls the same functions)."""
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def _using(spec: MetricSpec, timeout: Optional[float], work: Any) -> Any:
    """Run `work(source)`; a source that failed is dropped, so it is not reused broken."""
    try:
        return work(_source(spec, timeout))
    except EvalprotoError:
        broken = _SOURCES.pop(spec, None)
        terminate = getattr(broken, "terminate", None)  # a process (in process: nothing)
        if terminate is not None:
            terminate()
        raise


def end_sources() -> None:
    """End this worker's evaluators and whatever they started, busy or not (the run
    was aborted, and a worker that is killed ends nothing)."""
    while _SOURCES:
        source = _SOURCES.popitem()[1]
        if hasattr(source, "terminate"):  # a process (an in-process one has nothing to end)
            source.terminate()


@dataclass(frozen=True)
class Partition:
    """Segments [start, stop), and where their lines lie in each plain file (None for a
    compressed file, which a worker decompresses whole)."""

    start: int
    stop: int
    spans: Dict[str, Optional[Tuple[int, int]]]


def plan_partitions(ref_paths: Sequence[str], hyp_paths: Sequence[str], parts: int
                    ) -> Tuple[int, List[Partition]]:
    """Check the files as a local run would (the UTF-8 is checked by the partitions as
    they decode) and split the segments into about `parts` line ranges; returns the
    number of segments and the partitions."""
    check_inputs(ref_paths, hyp_paths)
    counts, starts = {}, {}
    ranges: List[Tuple[int, int]] = []
    for path in [*ref_paths, *hyp_paths]:
        data = read_bytes(path)
        counts[path] = count_lines(data)
        if not counts[path]:
            raise empty_file(path)
        if not ranges:  # by the first file's count, which the others must match
            ranges = contiguous_ranges(counts[path], parts)
        if is_plain(path, data):
            starts[path] = line_starts(data, [start for start, _ in ranges] + [ranges[-1][1]])
    check_line_counts(ref_paths, hyp_paths, counts)
    return counts[ref_paths[0]], [
        Partition(start, stop, {path: (starts[path][i], starts[path][i + 1])
                                if path in starts else None for path in counts})
        for i, (start, stop) in enumerate(ranges)]


def partition_rows(spec: MetricSpec, timeout: Optional[float], ref_paths: Sequence[str],
                   hyp_paths: Sequence[str], partition: Partition
                   ) -> Tuple[Dict[str, np.ndarray], Stripped]:
    """Every system's rows for one partition's segments, read by this worker, and the
    segments whose whitespace an evaluator command's protocol dropped (the client says
    so once for all partitions)."""
    def lines(path: str) -> List[str]:
        return read_line_range(path, partition.start, partition.stop, partition.spans[path])

    refs = [list(segment) for segment in zip(*map(lines, ref_paths))]
    systems = {path: lines(path) for path in hyp_paths}
    stripped = Stripped()
    rows = _using(spec, timeout, lambda source: corpus_rows(
        source, refs, systems, first_segment=partition.start + 1, stripped=stripped))
    return rows, stripped


def describe(spec: MetricSpec, timeout: Optional[float], sentences: bool = False
             ) -> Dict[str, Any]:
    def description(source: StatsSource) -> Dict[str, Any]:
        scorer = source.for_sentences() if sentences else source
        return {"stat_names": tuple(source.stat_names or ()),
                "higher_is_better": source.higher_is_better, "signature": scorer.signature(),
                "resample_dtype": getattr(source, "resample_dtype", np.float64),
                "name": getattr(source, "name", None),
                "score_name": getattr(source, "score_name", None),
                "extra_decimals": getattr(source, "extra_decimals", 0),
                "mean_of_rows": getattr(source, "mean_of_rows", None)}
    return _using(spec, timeout, description)


def score_vectors(spec: MetricSpec, timeout: Optional[float], vectors: np.ndarray,
                  sentences: bool = False) -> np.ndarray:
    return _using(spec, timeout, lambda source: (
        source.for_sentences() if sentences else source).score_many(vectors))


def verbose_score(spec: MetricSpec, timeout: Optional[float], total: np.ndarray) -> str:
    return _using(spec, timeout, lambda source: getattr(source, "verbose_score",
                                                        lambda total: "")(total))


def item_rows(items: List[Item], spec: MetricSpec, timeout: Optional[float]) -> List[np.ndarray]:
    """A bag partition's rows, as a one-element list (a bag partition is a list)."""
    return [_using(spec, timeout, lambda source: source.stats_many(list(items)))]


# -- on the client --------------------------------------------------------------------

# Dask's nannies give workers MALLOC_TRIM_THRESHOLD_=65536 by default. With it, glibc
# hands freed memory back to the system at once and stops raising its mmap threshold, so
# every large numpy array is mapped and faulted in anew: BLEU ran 30-50% slower on a
# worker, and so did an -e evaluator, which inherits the worker's environment.
UNTRIMMED = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
# Workers log on the user's terminal: tasks cancelled on Ctrl-C as warnings, and a
# heartbeat that meets the scheduler already closed as an error with a traceback. What
# goes wrong in a task reaches the client, which reports it as a local run would.
QUIET = {"distributed.nanny.pre-spawn-environ.DASK_LOGGING__DISTRIBUTED": "critical"}
# The evaluators a local worker starts end with it, even when it is killed (its nanny, or
# the run, gone): see evalproto.base.processes.KEEP_GROUPS. Set in the worker once it is
# spawned: a nanny copies its pre-spawn variables into its own process, the client's.
KEPT = {f"distributed.nanny.environ.{KEEP_GROUPS}": "1"}


def local_cluster(workers: int) -> Any:
    """A LocalCluster of single-threaded worker processes with glibc's default trimming,
    which log only errors."""
    import dask
    from dask.distributed import LocalCluster

    with dask.config.set({**UNTRIMMED, **QUIET, **KEPT}):  # read by the nannies as they are made
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            dashboard_address=":0")


@contextmanager
def connect(scheduler: str) -> Iterator[Any]:
    """A Dask client for a scheduler address, or for `local[:N]`: a cluster of N local
    worker processes (default 2) that is shut down afterwards."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise SetupError("`scheduler` needs Dask: pip install 'evalproto[dask]'") from None
    logging.getLogger("distributed").setLevel(logging.ERROR)  # no log lines on Ctrl-C
    if scheduler == "local" or scheduler.startswith("local:"):
        count = scheduler.partition(":")[2] or "2"
        if not is_whole_number(count) or int(count) < 1:
            raise SetupError(f"`scheduler` local:N needs a number of workers, got "
                             f"{scheduler!r}")
        with ExitStack() as stack:
            with signals_held_for_workers():  # one that comes is raised once they have started
                cluster = stack.enter_context(local_cluster(int(count)))
            client = stack.enter_context(Client(cluster))
            try:
                yield client
            except BaseException:  # the workers are killed on closing: their evaluators first
                with suppress(Exception):  # a cluster that broke has none left to end
                    client.run(end_sources, on_error="ignore")
                raise
        return
    if not ADDRESS.match(scheduler):
        hint = (f" (local:{scheduler[5:]}?)" if scheduler[:5] == "local"
                and is_whole_number(scheduler[5:]) else "")
        raise SetupError(f"`scheduler` takes a scheduler's address with its port, such as "
                         f"tcp://host:8786, or local[:N] for N local workers; got "
                         f"{scheduler!r}{hint}")
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, ValueError, TimeoutError) as exc:
        raise SetupError(f"cannot reach the Dask scheduler {scheduler!r}: {exc}") from None
    with client:
        yield client


class RemoteSource:
    """A metric whose evaluator lives on the workers; the client only sends vectors."""

    def __init__(self, client: Any, spec: MetricSpec, timeout: Optional[float],
                 sentences: bool = False) -> None:
        self._client, self._spec, self._timeout = client, spec, timeout
        self._sentences = sentences
        info = client.submit(describe, spec, timeout, sentences, pure=False).result()
        self.stat_names: Tuple[str, ...] = info["stat_names"]
        self.higher_is_better: bool = info["higher_is_better"]
        self.resample_dtype: type = info["resample_dtype"]
        self._signature: str = info["signature"]
        self.name: Optional[str] = info["name"]
        self.score_name: Optional[str] = info["score_name"]
        self.extra_decimals: int = info["extra_decimals"]
        self.mean_of_rows: Optional[bool] = info["mean_of_rows"]  # for --paired-ttest

    def signature(self) -> str:
        return self._signature

    def score_many(self, vectors: np.ndarray) -> np.ndarray:
        return self._client.submit(score_vectors, self._spec, self._timeout, vectors,
                                   self._sentences, pure=False).result()

    def verbose_score(self, total: np.ndarray) -> str:
        """What sacrebleu prints after the score of `total`, from a worker's evaluator."""
        return self._client.submit(verbose_score, self._spec, self._timeout, total,
                                   pure=False).result()

    def for_sentences(self) -> RemoteSource:
        return RemoteSource(self._client, self._spec, self._timeout, sentences=True)

    def stats_many(self, items: Sequence[Item]) -> np.ndarray:
        raise NotImplementedError("rows come from the workers' partitions")


def cluster_rows(client: Any, specs: Sequence[MetricSpec], ref_paths: Sequence[str],
                 hyp_paths: Sequence[str], timeout: Optional[float]
                 ) -> Tuple[int, List[Tuple[RemoteSource, Dict[str, np.ndarray]]]]:
    """(segments, [(source, every system's rows) per metric]) as a local run would have
    them, computed by the workers from their own line ranges of the files."""
    wanted = PARTITIONS_PER_WORKER * len(client.scheduler_info()["workers"])
    segments, partitions = client.submit(plan_partitions, ref_paths, hyp_paths, wanted,
                                         pure=False).result()
    computed = []
    for spec in specs:
        futures = [client.submit(partition_rows, spec, timeout, ref_paths, hyp_paths,
                                 partition, pure=False) for partition in partitions]
        parts = client.gather(futures)
        rows = {path: np.concatenate([part[path] for part, _ in parts]) for path in hyp_paths}
        stripped = Stripped()
        for _, tally in parts:
            stripped.add(tally)
        stripped.warn(f"evaluator {spec.spec}")
        computed.append((RemoteSource(client, spec, timeout), rows))
    return segments, computed


def run_each(client: Any, function: Callable[..., Any], arguments: Sequence[Sequence[Any]]
             ) -> List[Any]:
    """`function(*args)` for each of `arguments` on the workers, results in order."""
    return client.gather([client.submit(function, *args, pure=False) for args in arguments])


def bag_stats(bag: Any, spec: str, kind: str = IN_PROCESS,
              timeout: Optional[float] = None) -> np.ndarray:
    """The stats rows of a Dask bag of (refs, hyp) items, in the bag's order."""
    metric = MetricSpec(kind, spec)
    parts = bag.map_partitions(item_rows, metric, timeout).compute()
    return np.concatenate(parts)


def remote_source(spec: str, kind: str = IN_PROCESS, timeout: Optional[float] = None
                  ) -> RemoteSource:
    """A metric on the current Dask client's workers."""
    from dask.distributed import get_client

    return RemoteSource(get_client(), MetricSpec(kind, spec), timeout)
