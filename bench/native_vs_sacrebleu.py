#!/usr/bin/env python3
"""The compiled kernels' path against sacrebleu, for BLEU, chrF, chrF++ and TER: in
process (the metric's stats_many and score against sacrebleu's corpus_score) and as
whole processes (`evalproto corpus-score` against the sacrebleu command line). Each
pair runs in turns, round by round, so that a shared machine's drift falls on both;
the table shows medians and ours / theirs, next to the targets.

    bench/native_vs_sacrebleu.py [--refs REF [REF ...] --hyp HYP] [--segments N]
                                 [--rounds N] [--ter-rounds N] [--metrics NAME ...]

Without files it scores a synthetic corpus (bench/data.py) of N segments, one
reference each. Scores are checked to be equal.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Tuple

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from sacrebleu.metrics import BLEU as SacreBLEU  # noqa: E402
from sacrebleu.metrics import CHRF as SacreCHRF  # noqa: E402
from sacrebleu.metrics import TER as SacreTER  # noqa: E402

from data import make_corpus  # noqa: E402
from evalproto.evaluators.bleu import BLEU  # noqa: E402
from evalproto.evaluators.chrf import CHRF  # noqa: E402
from evalproto.evaluators.ter import TER  # noqa: E402

METRICS = {
    # name: (ours, theirs, options, evalproto -m spec, sacrebleu arguments, targets)
    "BLEU": (BLEU, SacreBLEU, {}, "bleu", ["-m", "bleu"], (None, 0.30)),
    "chrF": (CHRF, SacreCHRF, {}, "chrf", ["-m", "chrf"], (0.07, None)),
    "chrF++": (CHRF, SacreCHRF, {"word_order": 2}, "chrf --word-order 2",
               ["-m", "chrf", "--chrf-word-order", "2"], (0.10, None)),
    "TER": (TER, SacreTER, {}, "ter", ["-m", "ter"], (None, 0.05)),
}


def lines(path: str) -> List[str]:
    """Lines as sacrebleu's command line reads them."""
    return [line.rstrip() for line in Path(path).read_text(encoding="utf-8").split("\n")[:-1]]


def in_turns(ours: Callable[[], object], theirs: Callable[[], object],
             rounds: int) -> Tuple[float, float]:
    """Median seconds of each, run alternately; their last results must be equal."""
    times: Tuple[List[float], List[float]] = ([], [])
    results = [None, None]
    for _ in range(rounds):
        for side, function in enumerate((ours, theirs)):
            start = time.perf_counter()
            results[side] = function()
            times[side].append(time.perf_counter() - start)
    assert results[0] == results[1], results
    return statistics.median(times[0]), statistics.median(times[1])


def quietly(command: List[str]) -> Callable[[], None]:
    return lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) and None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refs", nargs="+", help="reference files")
    parser.add_argument("--hyp", help="hypothesis file")
    parser.add_argument("--segments", type=int, default=10_000,
                        help="synthetic segments without files (default 10,000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ter-rounds", type=int, default=3,
                        help="rounds for TER, whose sacrebleu side is slow")
    parser.add_argument("--metrics", nargs="+", choices=list(METRICS), default=list(METRICS))
    args = parser.parse_args()
    for package in ("evalproto", "evaluators"):  # as pip does; see bench/compare
        compileall.compile_dir(HERE.parent / package, quiet=1)
    with tempfile.TemporaryDirectory() as work:
        if args.refs and args.hyp:
            ref_paths, hyp_path = args.refs, args.hyp
        else:
            ref_paths, hyp_path = make_corpus(Path(work), args.segments, references=1)
        streams, hyps = [lines(path) for path in ref_paths], lines(hyp_path)
        items = [(list(refs), hyp) for refs, hyp in zip(zip(*streams), hyps)]
        print(f"{len(hyps)} segments x {len(streams)} references")
        print(f"{'metric':8} {'how':11} {'ours s':>9} {'sacrebleu s':>12} {'ratio':>7} "
              f"{'target':>7}")
        for name in args.metrics:
            ours_class, theirs_class, options, spec, sacre_args, targets = METRICS[name]
            rounds = args.ter_rounds if name == "TER" else args.rounds

            def ours() -> float:
                metric = ours_class(**options)
                return metric.score(metric.stats_many(items).sum(axis=0))

            def theirs() -> float:
                return theirs_class(**options).corpus_score(hyps, streams).score

            ours_command = [sys.executable, "-m", "evalproto", "corpus-score", *ref_paths,
                            hyp_path, "-m", spec]
            theirs_command = [sys.executable, "-m", "sacrebleu", *ref_paths, "-i", hyp_path,
                              *sacre_args]
            for how, pair, target in (("in process", (ours, theirs), targets[0]),
                                      ("process", (quietly(ours_command),
                                                   quietly(theirs_command)), targets[1])):
                mine, reference = in_turns(*pair, rounds)
                shown = f"{target:7.2f}" if target else f"{'':7}"
                print(f"{name:8} {how:11} {mine:9.3f} {reference:12.3f} "
                      f"{mine / reference:7.4f} {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
