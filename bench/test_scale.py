"""`corpus-score --paired-bs` with BLEU at scale: 5 systems of realistic segments (5-40
words), 1,000 resamples, at each size of --scale (default 100,000 and 1,000,000
segments). Time and peak memory of the whole process; sacrebleu cannot run this (its
float32 tensor of segments x resamples x statistics would take 40 GB at a million).
Targets at a million: <= 60 s and <= 1.5 GB, and time growing linearly."""

import os
import subprocess
import sys
import time

from data import make_systems


def sizes(config):
    return [int(size) for size in config.getoption("--scale").split(",") if size]


def pytest_generate_tests(metafunc):
    if "segments" in metafunc.fixturenames:
        metafunc.parametrize("segments", sizes(metafunc.config))


def run_measured(command):
    """(seconds, peak resident MB) of a command run to the end."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0, process.stderr.read().decode()
    return seconds, usage.ru_maxrss / 1024


def test_paired_bootstrap_scale(benchmark, tmp_path_factory, segments):
    ref, systems = make_systems(tmp_path_factory.mktemp(f"scale{segments}"), segments)
    command = [sys.executable, "-m", "evalproto", "corpus-score", ref, "-i", *systems,
               "--paired-bs", "-f", "json"]
    measured = {}

    def run():
        measured["seconds"], measured["peak_mb"] = run_measured(command)

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(measured, segments=segments)
    print(f"\n{segments} segments x 5 systems: {measured['seconds']:.1f} s, "
          f"{measured['peak_mb']:.0f} MB")
