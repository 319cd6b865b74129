"""Speed of evalproto against the reference tools, side by side on the same input.

Each scenario is benchmarked twice, `[ours]` and `[theirs]`; `bench/compare` runs this
file and prints the ratios of the medians. Scenarios and targets (ours / theirs):

- corpus BLEU as a whole process, 2,000 segments x 2 refs, vs the sacrebleu CLI (<= 0.7)
- an n-best tuning load (300 refs x 60 hyps) through bleu-evaluator's pipe, vs sacrebleu's
  BLEU.corpus_score in process on the same pairs (<= 0.5)
- chrF in process (<= 0.7)
- TER with identical numbers, 300 segments (<= 0.5)
- a 1,000-resample bootstrap CI of BLEU over 2,000 segments, time and peak memory (<= 0.2)
- lm-score on an LM Challenge log vs `lmc stats` (<= 0.3)
- protocol overhead: -e bleu-evaluator vs -m bleu, both ours (<= 1.3)
"""

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER
from sacrebleu.significance import _bootstrap_resample

from data import make_nbest
from evalproto.client import EvaluatorProcess
from evalproto.resampling import bootstrap_scores
from evaluators.bleu import BLEU
from evaluators.chrf import CHRF
from evaluators.ter import TER

SIDES = ["ours", "theirs"]
ROOT = Path(__file__).parent.parent
LMC = ROOT / ".venv-lmc" / "bin" / "lmc"
BLEU_EVALUATOR = str(Path(sys.executable).parent / "bleu-evaluator")
"""The installed script itself: on PATH it may be a version manager's shim (pyenv's
costs 60-80 ms a start), which is not what a virtualenv user runs."""


def lines(path):
    return [line.rstrip() for line in Path(path).read_text(encoding="utf-8").split("\n")[:-1]]


def run(command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def texts(corpus):
    refs, hyp = corpus
    return [lines(path) for path in refs], lines(hyp)


@pytest.fixture(scope="module")
def nbest(tmp_path_factory):
    ref, hyp = make_nbest(tmp_path_factory.mktemp("nbest"), references=300, per_reference=60)
    return lines(ref), lines(hyp)


@pytest.mark.parametrize("side", SIDES)
def test_corpus_bleu_process(benchmark, corpus, side):
    refs, hyp = corpus
    command = ([sys.executable, "-m", "evalproto", "corpus-score", *refs, hyp] if side == "ours"
               else [sys.executable, "-m", "sacrebleu", *refs, "-i", hyp, "-m", "bleu"])
    benchmark.pedantic(run, args=(command,), rounds=9, iterations=1)


@pytest.mark.parametrize("side", SIDES)
def test_nbest_tuning_load(benchmark, nbest, side):
    refs, hyps = nbest

    def ours():
        with EvaluatorProcess(BLEU_EVALUATOR) as process:
            rows = process.stats_many([([ref], hyp) for ref, hyp in zip(refs, hyps)])
            return process.score(rows.sum(axis=0))

    def theirs():
        return SacreBLEU().corpus_score(hyps, [refs]).score

    score = benchmark.pedantic(ours if side == "ours" else theirs, rounds=3, iterations=1)
    assert score == pytest.approx(theirs(), abs=1e-9)


def compare_in_process(benchmark, side, ours_class, theirs_class, refs, hyps):
    """Benchmark one side of a metric computed in process, checking equal scores."""
    def ours():
        metric = ours_class()
        return metric.checked_score(metric.stats_many(list(zip(zip(*refs), hyps))).sum(axis=0))

    def theirs():
        return theirs_class().corpus_score(hyps, refs).score

    score = benchmark.pedantic(ours if side == "ours" else theirs, rounds=3, iterations=1)
    assert score == pytest.approx(theirs(), abs=1e-9)


@pytest.mark.parametrize("side", SIDES)
def test_chrf_in_process(benchmark, texts, side):
    compare_in_process(benchmark, side, CHRF, SacreCHRF, *texts)


@pytest.mark.parametrize("side", SIDES)
def test_ter_identical_numbers(benchmark, texts, side):
    refs, hyps = [ref[:300] for ref in texts[0]], texts[1][:300]
    compare_in_process(benchmark, side, TER, SacreTER, refs, hyps)


@pytest.mark.parametrize("side", SIDES)
def test_bootstrap_ci(benchmark, texts, side):
    refs, hyps = texts
    bleu, sacre = BLEU(), SacreBLEU()
    rows = bleu.stats_many(list(zip(zip(*refs), hyps)))
    stats = sacre._extract_corpus_statistics(hyps, refs)

    def ours():
        return bootstrap_scores(rows, bleu.score_many, 1000, 12345)

    def theirs():
        return _bootstrap_resample(stats, sacre, 1000)

    benchmark.pedantic(ours if side == "ours" else theirs, rounds=3, iterations=1)
    tracemalloc.start()
    (ours if side == "ours" else theirs)()
    benchmark.extra_info["peak_memory_mb"] = tracemalloc.get_traced_memory()[1] / 2 ** 20
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


@pytest.mark.parametrize("side", SIDES)
def test_lm_score(benchmark, lm_log, side):
    command = ([sys.executable, "-m", "evalproto", "lm-score", lm_log, "-f", "json"]
               if side == "ours" else [str(LMC), "stats", lm_log])
    benchmark.pedantic(run, args=(command,), rounds=3, iterations=1)


@pytest.mark.parametrize("side", SIDES)
def test_protocol_overhead(benchmark, corpus, side):
    refs, hyp = corpus
    metric = ["-e", BLEU_EVALUATOR] if side == "ours" else ["-m", "bleu"]
    benchmark.pedantic(run, args=([sys.executable, "-m", "evalproto", "corpus-score", *refs,
                                   hyp, *metric],), rounds=9, iterations=1)
