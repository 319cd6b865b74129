"""Compiled kernels take their share of the CPUs (evalproto.base.compiled's
kernel_threads): the CPUs the process may use, which in a container means its CPU
quota (cgroup v2's cpu.max, v1's cpu.cfs_quota_us over cpu.cfs_period_us) as well as
its affinity mask; one thread in each -j copy, in process and as an -e command (Dask
workers: tests/test_distributed.py). The quota is shown to the code through the files
it reads, under a root that the tests point at a directory of their own."""

import json
import math
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, run_cli, threads_evaluator

from evalproto.base import cpus
from evalproto.base.compiled import THREADS_VARIABLE, compiled, kernel_threads
from evalproto.evaluators.native import kernels
from evalproto.sources.pool import EvaluatorPool
from evalproto.sources.specs import MetricSpec
from evalproto.stats import resampling

AFFINITY = len(os.sched_getaffinity(0))
MAX_THREADS = kernels().MAX_THREADS


def cgroups(directory, membership, files):
    """A cgroup file system under `directory` holding `files`, and the process's
    /proc/self/cgroup saying `membership`: (root, membership file)."""
    root = directory / "cgroup"
    root.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (directory / "membership").write_text(membership)
    return str(root), str(directory / "membership")


V1 = {"cpu,cpuacct/docker/x/cpu.cfs_quota_us": "250000\n",
      "cpu,cpuacct/docker/x/cpu.cfs_period_us": "100000\n"}


@pytest.mark.parametrize("membership, files, quota", [
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),  # a container's own cgroup (v2)
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),
    ("0::/a/b\n", {"a/cpu.max": "100000 100000\n", "a/b/cpu.max": "max 100000\n"}, 1.0),
    ("0::/a/b\n", {"a/cpu.max": "300000 100000\n", "a/b/cpu.max": "50000 100000\n"}, 0.5),
    ("0::/a/b\n", {"cpu.max": "200000 100000\n"}, 2.0),  # the mount is the container's
    ("4:cpu,cpuacct:/docker/x\n0::/\n", V1, 2.5),  # cgroup v1, its path under the mount
    ("4:cpu,cpuacct:/docker/x\n", {"cpu/cpu.cfs_quota_us": "50000\n",
                                   "cpu/cpu.cfs_period_us": "100000\n"}, 0.5),
    ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ("4:memory:/x\n", {"memory/x/cpu.cfs_quota_us": "1000\n"}, None),  # not the cpu controller
    ("0::/\n", {"cpu.max": "a lot\n"}, None),
    ("0::/\n", {}, None),
])
def test_the_cpu_quota_is_read_from_the_cgroup_files(tmp_path, membership, files, quota):
    root, member = cgroups(tmp_path, membership, files)
    assert cpus.cpu_quota(root, member) == quota
    expected = AFFINITY if quota is None else max(1, min(AFFINITY, math.ceil(quota)))
    assert cpus.usable_cpus(root, member) == expected


def test_without_cgroup_files_only_the_affinity_mask_counts(tmp_path):
    assert cpus.cpu_quota(str(tmp_path / "none"), str(tmp_path / "missing")) is None
    assert cpus.usable_cpus(str(tmp_path / "none"), str(tmp_path / "missing")) == AFFINITY


@pytest.fixture
def quota(tmp_path, monkeypatch):
    """A function that shows this process a CPU quota of so many CPUs (cgroup v2), where
    evalproto reads its own (evalproto.base.cpus.CGROUP_ROOT and MEMBERSHIP)."""
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)

    def set_quota(cpus_worth: float) -> None:
        root, member = cgroups(tmp_path, "0::/\n",
                               {"cpu.max": f"{int(cpus_worth * 100000)} 100000\n"})
        monkeypatch.setattr(cpus, "CGROUP_ROOT", root)
        monkeypatch.setattr(cpus, "MEMBERSHIP", member)
        cpus._own_quota.cache_clear()  # read once per process: a test changes it

    yield set_quota
    monkeypatch.undo()
    cpus._own_quota.cache_clear()


def native_limit() -> int:
    """The threads a BLEU, chrF or TER kernel call takes now, as evalproto sets them
    before each call."""
    module = kernels()
    return module.set_threads(module.MAX_THREADS)


def test_kernels_take_the_quota_as_well_as_the_affinity_mask(quota):
    quota(1)
    assert kernel_threads() == 1 and native_limit() == 1
    quota(0.3)  # less than a CPU's worth is still one thread
    assert kernel_threads() == 1
    quota(64)
    assert kernel_threads() == AFFINITY
    assert native_limit() == min(AFFINITY, MAX_THREADS)


def test_the_bootstrap_draws_ahead_on_a_second_thread_only_with_a_second_cpu(quota):
    """The next chunk's draws overlap this chunk's products on a thread of their own,
    unless the process has one CPU; the counts are the same either way."""
    drawn = {}
    for cpus_worth in (1, 2):
        quota(cpus_worth)
        chunks, ahead = [], False
        for counts in resampling.bootstrap_counts(1000, 40, 1):
            chunks.append(counts.copy())
            ahead |= any(thread.name.startswith("bootstrap-draws")
                         for thread in threading.enumerate())
        drawn[cpus_worth] = np.concatenate(chunks)
        assert len(chunks) > 1 and ahead == (cpus_worth > 1 and AFFINITY > 1)
    assert np.array_equal(drawn[1], drawn[2])


def test_approximate_randomization_runs_on_the_kernel_threads(quota, monkeypatch):
    real = compiled("evalproto.stats._resample")
    threads = []

    class Spy:
        def randomization_sums(self, *args, **options):
            threads.append(options["threads"])
            return real.randomization_sums(*args, **options)

    monkeypatch.setattr(resampling, "compiled", lambda name: Spy())
    rows = [np.random.default_rng(k).integers(0, 9, size=(500, 3)).astype(float)
            for k in range(2)]
    figures = {}
    for cpus_worth in (1, 64):
        quota(cpus_worth)
        figures[cpus_worth] = resampling.approximate_randomization(
            rows[0], rows[1], lambda sums: {"x": sums[:, 0]}, 300, 5)["x"].p_value
    assert threads == [1] * 4 + [AFFINITY] * 4  # a quarter of the trials a call
    assert figures[1] == figures[64]


def test_the_threads_variable_caps_every_kernel_and_is_checked(quota, monkeypatch):
    quota(64)
    monkeypatch.setenv(THREADS_VARIABLE, "1")
    assert kernel_threads() == 1 and native_limit() == 1
    monkeypatch.setenv(THREADS_VARIABLE, "1000")
    assert kernel_threads() == AFFINITY
    # ² is a digit to str.isdigit; int() reads at most 4,300 digits
    for bad in ("0", "two", "-1", "1.5", "\u00b2", "9" * 5000):
        monkeypatch.setenv(THREADS_VARIABLE, bad)
        result = run_cli("corpus-score", DE_EN_REFS[0], DE_EN_HYP, "-m", "bleu")
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert (f"{THREADS_VARIABLE} must be a whole number >= 1 (the most threads a "
                f"compiled kernel may run on), not {bad!r}") in result.output


def threads_of_a_run(command, jobs):
    """The mean threads of an evaluator command's kernel calls in a corpus-score with
    `jobs` copies, run as a user runs it (its head start included)."""
    completed = subprocess.run(
        [sys.executable, "-m", "evalproto", "corpus-score", *DE_EN_REFS, DE_EN_HYP,
         "-e", command, "-j", jobs, "-f", "json"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)["score"]


def test_j_copies_of_an_evaluator_command_run_their_kernels_on_one_thread(tmp_path,
                                                                          monkeypatch):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    command = threads_evaluator(tmp_path)
    assert threads_of_a_run(command, "1") == min(kernel_threads(), MAX_THREADS)
    assert threads_of_a_run(command, "2") == 1
    assert threads_of_a_run(command, "3") == 1


def kernel_limit_of_a_copy(_):
    """In a -j worker: the threads its kernel calls take."""
    return kernel_threads(), native_limit()


def test_j_copies_in_process_run_their_kernels_on_one_thread(monkeypatch):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    items = [([ref], hyp) for ref, hyp in zip(open(DE_EN_REFS[0]).read().split("\n"),
                                               open(DE_EN_HYP).read().split("\n"))]
    with EvaluatorPool(MetricSpec("in-process", "bleu"), 2, None) as copies:
        assert len(copies.stats_many(items)) == len(items)
        seen = list(copies._processes.map(kernel_limit_of_a_copy, range(8)))
    assert set(seen) == {(1, 1)}
    assert THREADS_VARIABLE not in os.environ  # the parent's kernels keep their share
