"""Speed of evalproto against the reference tools, side by side on the same input.

Each scenario runs ours and the reference tool in turns, round by round, so that the
shared machine's drift falls on both alike: pytest-benchmark times ours, and theirs'
median goes into the benchmark's extra_info. Both sides' results are checked equal.
`bench/compare` runs this file and prints the ratios of the medians against the
targets in its TARGETS table.
"""

import json
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from data import make_corpus, make_nbest
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF

from evalproto import EvaluatorProcess
from evalproto.evaluators.chrf import CHRF

ROOT = Path(__file__).parent.parent
LMC = ROOT / ".venv-lmc" / "bin" / "lmc"
BLEU_EVALUATOR = str(Path(sys.executable).parent / "bleu-evaluator")
"""The installed script itself: on PATH it may be a version manager's shim (pyenv's
costs 60-80 ms a start), which is not what a virtualenv user runs."""
EVALPROTO = [sys.executable, "-m", "evalproto"]
SACREBLEU = [sys.executable, "-m", "sacrebleu", "-w", "4"]


def lines(path):
    """Lines as sacrebleu's command line reads them."""
    return [line.rstrip() for line in Path(path).read_text(encoding="utf-8").split("\n")[:-1]]


def output(command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


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


def scores_of(text):
    """The scores, to 4 decimals, of our JSON Lines or of sacrebleu's JSON (`-w 4`:
    one object, or a list of them)."""
    try:
        found = json.loads(text)
    except ValueError:
        found = [json.loads(line) for line in text.splitlines()]
    rows = found if isinstance(found, list) else [found]
    return [f"{row['score']:.4f}" for row in rows]


def processes_in_turns(benchmark, ours, theirs, rounds):
    """Two commands in turns; their scores (JSON) must agree to the printed precision."""
    mine, reference = in_turns(benchmark, partial(output, ours), partial(output, theirs), rounds)
    assert scores_of(mine) == scores_of(reference)


@pytest.fixture(scope="module")
def texts(corpus):
    refs, hyp = corpus
    return [lines(path) for path in refs], lines(hyp)


def test_corpus_bleu_process(benchmark, corpus):
    refs, hyp = corpus
    processes_in_turns(benchmark, [*EVALPROTO, "corpus-score", *refs, hyp, "-f", "json"],
                       [*SACREBLEU, *refs, "-i", hyp, "-m", "bleu", "-f", "json"], rounds=9)


def test_nbest_tuning_load(benchmark, tmp_path_factory):
    """12,000 SCORE lines (300 references x 40 hypotheses) through bleu-evaluator's
    pipe, against sacrebleu's corpus_score in process on the same pairs."""
    ref, hyp = make_nbest(tmp_path_factory.mktemp("nbest"), references=300, per_reference=40)
    refs, hyps = lines(ref), lines(hyp)

    def ours():
        with EvaluatorProcess(BLEU_EVALUATOR) as process:
            rows = process.stats_many([([ref], hyp) for ref, hyp in zip(refs, hyps)])
            return process.score(rows.sum(axis=0))

    def theirs():
        return SacreBLEU().corpus_score(hyps, [refs]).score

    score, expected = in_turns(benchmark, ours, theirs, rounds=5)
    assert score == expected


@pytest.fixture(scope="module")
def distinct(tmp_path_factory):
    """10,000 segments, each with its own reference (no reference repeats)."""
    refs, hyp = make_corpus(tmp_path_factory.mktemp("distinct"), 10_000, references=1)
    return [lines(path) for path in refs], lines(hyp)


@pytest.mark.parametrize("word_order", [0, 2], ids=["chrF", "chrF++"])
def test_chrf_in_process(benchmark, distinct, word_order):
    refs, hyps = distinct
    items = [(list(segment), hyp) for segment, hyp in zip(zip(*refs), hyps)]

    def ours():
        metric = CHRF(word_order=word_order)
        return metric.checked_score(metric.stats_many(items).sum(axis=0))

    def theirs():
        return SacreCHRF(word_order=word_order).corpus_score(hyps, refs).score

    score, expected = in_turns(benchmark, ours, theirs, rounds=5)
    assert score == expected


def test_ter_process(benchmark, corpus):
    refs, hyp = corpus
    processes_in_turns(benchmark, [*EVALPROTO, "corpus-score", *refs, hyp, "-m", "ter",
                                   "-f", "json"],
                       [*SACREBLEU, *refs, "-i", hyp, "-m", "ter", "-f", "json"], rounds=3)


def test_bootstrap_ci_process(benchmark, corpus):
    """BLEU and chrF with 1,000-resample intervals, as whole processes."""
    refs, hyp = corpus
    processes_in_turns(benchmark, [*EVALPROTO, "corpus-score", *refs, hyp, "-m", "bleu", "-m",
                                   "chrf", "--confidence", "-f", "json"],
                       [*SACREBLEU, *refs, "-i", hyp, "-m", "bleu", "chrf", "--confidence",
                        "-f", "json"], rounds=5)


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
    ours, theirs = in_turns(benchmark, partial(output, [*EVALPROTO, "lm-score", lm_log, "-f",
                                                        "json"]),
                            partial(output, [str(LMC), "stats", lm_log]), rounds=3)
    assert json.loads(ours)["entropy"]["mean"] == pytest.approx(
        json.loads(theirs)["entropy"]["mean"], rel=1e-9)


def test_protocol_overhead(benchmark, corpus):
    refs, hyp = corpus
    command = [*EVALPROTO, "corpus-score", *refs, hyp, "-f", "json"]
    processes_in_turns(benchmark, [*command, "-e", BLEU_EVALUATOR], [*command, "-m", "bleu"],
                       rounds=9)


def test_report_vs_compare_mt(benchmark, four_systems, tmp_path):
    """The whole page (scores with intervals, all-pairs paired bootstrap, clusters,
    compare-mt's analyses, segments, plots) against compare-mt's default text report;
    one reference, which is what compare-mt takes. Each side must have reported every
    system."""
    ref, systems = four_systems
    page = tmp_path / "report.json"
    ours = [*EVALPROTO, "report", ref, "-i", *systems, "-o", str(tmp_path / "report.html"),
            "--json", str(page)]
    theirs = [sys.executable, "-m", "compare_mt.compare_mt_main", ref, *systems]
    _, reference = in_turns(benchmark, partial(output, ours), partial(output, theirs), rounds=5)
    assert json.loads(page.read_text())["systems"] == systems
    assert "\t".join(f"sys{number}" for number in range(1, 5)) in reference
