"""corpus-score with BLEU at scale: 5 systems of realistic segments (5-40 words), with
`--paired-bs` (1,000 resamples), `--confidence` (1,000 resamples of every system) and
`--paired-ar` (10,000 trials), sacrebleu's defaults, at each size of --scale (default
100,000 and 1,000,000 segments). Time and peak memory of the whole process; sacrebleu
cannot run this (its float32 tensor of segments x resamples x statistics would take
40 GB at a million).

Targets: at a million, <= 60 s and <= 1.5 GB (issue 18's, --paired-bs); at ten million,
<= 180 s and <= 3 GB each, in at most 11 times a million's time (issue 31's):

    pytest bench/test_scale.py --scale 1000000,10000000 --benchmark-enable

The corpora are generated into a temporary directory removed at the end (ten million
segments take ~5 minutes and 5.7 GB), or kept in --scale-data DIR and taken from it
again. bench/compare prints the figures against the targets."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from data import make_systems

ANALYSES = {"paired-bs": ["--paired-bs"], "confidence": ["--confidence"],
            "paired-ar": ["--paired-ar"]}
SECONDS = {}
"""(analysis, segments) -> seconds, for the growth between sizes."""


def sizes(config):
    return [int(size) for size in config.getoption("--scale").split(",") if size]


def pytest_generate_tests(metafunc):
    if "segments" in metafunc.fixturenames:
        metafunc.parametrize("segments", sizes(metafunc.config))


@pytest.fixture(scope="session")
def scale_data(request):
    """Where the corpora are: --scale-data DIR (kept), or a directory removed at the end."""
    kept = request.config.getoption("--scale-data")
    if kept:
        yield Path(kept)
        return
    work = Path(tempfile.mkdtemp(prefix="evalproto-scale-"))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def corpus(directory: Path, segments: int):
    """(reference, systems) of `segments` segments in directory/segments, made once."""
    where = directory / str(segments)
    ready = where / "complete"
    if not ready.exists():
        ref, systems = make_systems(where, segments)
        ready.write_text("")
        return ref, systems
    return str(where / "ref"), [str(where / f"system{number}") for number in range(1, 6)]


def run_measured(command):
    """(seconds, peak resident MB, CPU seconds) of a command run to the end. The CPU
    time moves less than the time with what else runs on a shared machine."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0, process.stderr.read().decode()
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("analysis", list(ANALYSES))
def test_corpus_score_scale(benchmark, scale_data, segments, analysis):
    ref, systems = corpus(scale_data, segments)
    command = [sys.executable, "-m", "evalproto", "corpus-score", ref, "-i", *systems,
               *ANALYSES[analysis], "-f", "json"]
    measured = {}

    def run():
        measured["seconds"], measured["peak_mb"], measured["cpu_seconds"] = run_measured(command)

    benchmark.pedantic(run, rounds=1, iterations=1)
    SECONDS[analysis, segments] = measured["seconds"]
    smaller = [size for (name, size) in SECONDS if name == analysis and size < segments]
    growth = {}
    if smaller:
        growth = {"growth": measured["seconds"] / SECONDS[analysis, max(smaller)],
                  "growth_from": max(smaller)}
    benchmark.extra_info.update(measured, segments=segments, analysis=analysis, **growth)
    print(f"\n{analysis}, {segments} segments x 5 systems: {measured['seconds']:.1f} s, "
          f"{measured['peak_mb']:.0f} MB, {measured['cpu_seconds']:.1f} s of CPU"
          + (f", {growth['growth']:.1f}x the time of {growth['growth_from']}" if growth else ""))
