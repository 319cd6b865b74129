"""Speed of evalproto against the reference tools, side by side on the same input.

Each scenario runs ours and the reference tool in turns, round by round, so that the
shared machine's drift falls on both alike: pytest-benchmark times ours, and theirs'
median goes into the benchmark's extra_info. `bench/compare` runs this file and prints
the ratios of the medians. Scenarios and targets (ours / theirs):

- corpus BLEU as a whole process, 2,000 segments x 2 refs, vs the sacrebleu CLI (<= 0.7)
- an n-best tuning load (300 refs x 60 hyps) through bleu-evaluator's pipe, vs sacrebleu's
  BLEU.corpus_score in process on the same pairs (<= 0.5)
- chrF in process (<= 0.7)
- TER with identical numbers, 300 segments (<= 0.5)
- TER with -j 2 vs -j 1 on 2 cores, whole process, 2,000 segments (<= 0.59: 1.7x)
- a 1,000-resample bootstrap CI of BLEU over 2,000 segments, time and peak memory (<= 0.2)
- lm-score on an LM Challenge log vs `lmc stats` (<= 0.3)
- protocol overhead: -e bleu-evaluator vs -m bleu, both ours (<= 1.3)
"""

import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER
from sacrebleu.significance import _bootstrap_resample

from data import make_nbest
from evalproto.sources.process import EvaluatorProcess
from evalproto.stats.resampling import bootstrap_scores
from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.chrf import CHRF
from evalproto.evaluators.ter import TER

ROOT = Path(__file__).parent.parent
LMC = ROOT / ".venv-lmc" / "bin" / "lmc"
BLEU_EVALUATOR = str(Path(sys.executable).parent / "bleu-evaluator")
"""The installed script itself: on PATH it may be a version manager's shim (pyenv's
costs 60-80 ms a start), which is not what a virtualenv user runs."""


def lines(path):
    return [line.rstrip() for line in Path(path).read_text(encoding="utf-8").split("\n")[:-1]]


def run(command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def in_turns(benchmark, ours, theirs, rounds):
    """Benchmark `ours`, calling `theirs` before each round (untimed by the benchmark)
    and recording its median time as extra_info["theirs_median"]. Returns the results
    of each side's last call."""
    times, results = [], {}

    def run_theirs():
        start = time.perf_counter()
        results["theirs"] = theirs()
        times.append(time.perf_counter() - start)

    results["ours"] = benchmark.pedantic(ours, setup=run_theirs, rounds=rounds, iterations=1)
    benchmark.extra_info["theirs_median"] = statistics.median(times)
    return results["ours"], results["theirs"]


def processes_in_turns(benchmark, ours, theirs, rounds):
    in_turns(benchmark, partial(run, ours), partial(run, theirs), rounds)


@pytest.fixture(scope="module")
def texts(corpus):
    refs, hyp = corpus
    return [lines(path) for path in refs], lines(hyp)


@pytest.fixture(scope="module")
def nbest(tmp_path_factory):
    ref, hyp = make_nbest(tmp_path_factory.mktemp("nbest"), references=300, per_reference=60)
    return lines(ref), lines(hyp)


def test_corpus_bleu_process(benchmark, corpus):
    refs, hyp = corpus
    processes_in_turns(benchmark, [sys.executable, "-m", "evalproto", "corpus-score", *refs, hyp],
                       [sys.executable, "-m", "sacrebleu", *refs, "-i", hyp, "-m", "bleu"],
                       rounds=9)


def test_nbest_tuning_load(benchmark, nbest):
    refs, hyps = nbest

    def ours():
        with EvaluatorProcess(BLEU_EVALUATOR) as process:
            rows = process.stats_many([([ref], hyp) for ref, hyp in zip(refs, hyps)])
            return process.score(rows.sum(axis=0))

    def theirs():
        return SacreBLEU().corpus_score(hyps, [refs]).score

    score, expected = in_turns(benchmark, ours, theirs, rounds=3)
    assert score == pytest.approx(expected, abs=1e-9)


def compare_in_process(benchmark, ours_class, theirs_class, refs, hyps):
    """Benchmark a metric computed in process against sacrebleu's, checking equal scores."""
    def ours():
        metric = ours_class()
        return metric.checked_score(metric.stats_many(list(zip(zip(*refs), hyps))).sum(axis=0))

    def theirs():
        return theirs_class().corpus_score(hyps, refs).score

    score, expected = in_turns(benchmark, ours, theirs, rounds=3)
    assert score == pytest.approx(expected, abs=1e-9)


def test_chrf_in_process(benchmark, texts):
    compare_in_process(benchmark, CHRF, SacreCHRF, *texts)


def test_ter_identical_numbers(benchmark, texts):
    refs, hyps = [ref[:300] for ref in texts[0]], texts[1][:300]
    compare_in_process(benchmark, TER, SacreTER, refs, hyps)


def test_ter_two_jobs(benchmark, corpus):
    """The -j pool's speed-up, ours against ours: a pool of 2 against 1 copy, on the whole
    corpus (on a small one, starting the pool's worker processes weighs too much)."""
    refs, hyp = corpus
    command = [sys.executable, "-m", "evalproto", "corpus-score", *refs, hyp, "-m", "ter"]
    processes_in_turns(benchmark, [*command, "-j", "2"], [*command, "-j", "1"], rounds=3)


def test_bootstrap_ci(benchmark, texts):
    refs, hyps = texts
    bleu, sacre = BLEU(), SacreBLEU()
    rows = bleu.stats_many(list(zip(zip(*refs), hyps)))
    stats = sacre._extract_corpus_statistics(hyps, refs)

    def ours():
        return bootstrap_scores(rows, bleu.score_many, 1000, 12345)

    def theirs():
        return _bootstrap_resample(stats, sacre, 1000)

    in_turns(benchmark, ours, theirs, rounds=15)
    for side, resample in (("ours", ours), ("theirs", theirs)):
        tracemalloc.start()
        resample()
        benchmark.extra_info[f"{side}_peak_memory_mb"] = (tracemalloc.get_traced_memory()[1]
                                                          / 2 ** 20)
        tracemalloc.stop()


@pytest.fixture(scope="module")
def lm_log(tmp_path_factory, request):
    """A synthetic wc + we log with realistic shapes (events given by --lm-events)."""
    events = int(request.config.getoption("--lm-events"))
    random = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("lm") / "log.jsonl"
    with open(path, "w") as stream:
        for i in range(events):
            target = f"w{int(random.zipf(1.3)) % 5000}"
            stream.write(json.dumps({
                "user": f"u{i // 5000}", "message": (i // 12) % 400, "token": i % 12,
                "character": 0, "target": target,
                "completions": [[f"w{int(random.zipf(1.3)) % 5000}" for _ in range(10)],
                                [target[1:]]],
                "logp": None if i % 17 == 0 else float(-random.gamma(2.0, 2.0))}) + "\n")
    return str(path)


def test_lm_score(benchmark, lm_log):
    processes_in_turns(benchmark,
                       [sys.executable, "-m", "evalproto", "lm-score", lm_log, "-f", "json"],
                       [str(LMC), "stats", lm_log], rounds=3)


def test_protocol_overhead(benchmark, corpus):
    refs, hyp = corpus
    command = [sys.executable, "-m", "evalproto", "corpus-score", *refs, hyp]
    processes_in_turns(benchmark, [*command, "-e", BLEU_EVALUATOR], [*command, "-m", "bleu"],
                       rounds=9)
