#!/usr/bin/env python3
"""evalproto against the compiled sacrebleu drop-ins and the MBR tools, side by side in
one run (issue 40):

    python3 bench/peers.py [--data DIR] [--rounds N] [--sizes 6000,30000]

- corpus chrF and BLEU in process against sacrebleu-mojo 0.2.4 (and sacrebleu), on
  WMT22 segments (each system's output against reference A, de-en and en-de, repeated
  to each size);
- pairwise chrF, 4 x 256 x 256 (each batch's sentences against themselves), against
  fastchrf 0.2.1's pairwise_chrf;
- pairwise BLEU, 128 x 128, against a loop over sacrebleu's sentence_score;
- `evalproto corpus-score` BLEU as a whole process (de-en, 2 references) against
  sacrebleu's command line.

The peers live in a virtual environment of their own, bench/.venv-peers (made here on
the first run, from PyPI; never a dependency of evalproto), whose Python runs
bench/peer_worker.py: both sides read their inputs once, then take turns round by round,
each timing its own call in process, so that the machine's drift falls on both alike.
The table gives each side's median and the ratio of the medians (ours / theirs; lower
is better), with the spread of the rounds' ratios (the machine's noise), and the
equality checks: corpus scores equal; pairwise BLEU equal to sacrebleu's in every
cell; pairwise chrF equal to sacrebleu's sentence scores in the rows checked, and how
far fastchrf's own numbers are from them.
"""

from __future__ import annotations

import argparse
import compileall
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

import evalproto

HERE = Path(__file__).parent
ROOT = HERE.parent
PEERS = HERE / ".venv-peers"
PEER_PACKAGES = ["sacrebleu==2.6.0", "fastchrf==0.2.1"]
MOJO = "sacrebleu-mojo==0.2.4"
"""Declares Python >= 3.12, but its wheel runs on 3.11: installed without its
requirements (sacrebleu's, installed above) and without the Python check."""
TARGETS = {"corpus chrF": 0.2, "corpus BLEU": 0.05, "pairwise chrF": 1.0,
           "pairwise BLEU": 0.02, "corpus-score BLEU, whole process": 0.30}


def peer_python() -> str:
    """The peers' Python, their environment made first if it is missing."""
    python = PEERS / "bin" / "python"
    if not python.exists():
        venv.create(PEERS, with_pip=True)
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *PEER_PACKAGES], check=True)
        subprocess.run([*pip, "--no-deps", "--ignore-requires-python", MOJO], check=True)
    return str(python)


def wmt_lines(path: Path) -> List[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def inputs(data: Path, sizes: List[int]) -> Dict[str, Any]:
    """Both sides' inputs: corpora of each size, the pairwise batches."""
    pairs: List[Tuple[str, str]] = []
    for pair in ("de-en", "en-de"):
        target = pair.split("-")[1]
        ref = wmt_lines(data / pair / f"{pair}.ref.A.{target}")
        for hyp in sorted((data / pair).glob(f"{pair}.hyp.*")):
            pairs += zip(wmt_lines(hyp), ref)
    corpora = {}
    for size in sizes:
        chosen = list(itertools.islice(itertools.cycle(pairs), size))
        corpora[str(size)] = {"hyps": [hyp for hyp, _ in chosen],
                              "refs": [ref for _, ref in chosen]}
    sentences = [hyp for hyp, _ in pairs]
    return {"corpora": corpora,
            "batches": [sentences[b * 256:(b + 1) * 256] for b in range(4)],
            "bleu_texts": sentences[2000:2128], "checked_rows": 8}


class Peer:
    """bench/peer_worker.py in the peers' environment."""

    def __init__(self, data_path: str) -> None:
        self.process = subprocess.Popen(
            [peer_python(), str(HERE / "peer_worker.py"), data_path], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        assert json.loads(self.process.stdout.readline())["ready"]  # type: ignore[union-attr]

    def run(self, task: str, size: str = "") -> Tuple[float, Any]:
        self.process.stdin.write(json.dumps([task, size]) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        reply = json.loads(self.process.stdout.readline())  # type: ignore[union-attr]
        return reply["seconds"], reply["result"]

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait()


def timed(call: Callable[[], Any]) -> Tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def in_turns(rounds: int, ours: Callable[[], Tuple[float, Any]],
             theirs: Callable[[], Tuple[float, Any]]) -> Dict[str, Any]:
    """Both sides' times, round by round, and each side's last result."""
    mine: List[float] = []
    peer: List[float] = []
    results: Dict[str, Any] = {}
    for _ in range(rounds):
        seconds, results["theirs_result"] = theirs()
        peer.append(seconds)
        seconds, results["ours_result"] = ours()
        mine.append(seconds)
    ratios = [a / b for a, b in zip(mine, peer)]
    return {"ours": statistics.median(mine), "theirs": statistics.median(peer),
            "spread": (min(ratios), max(ratios)), **results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "wmt22"),
                        help="the WMT22 folder (de-en/, en-de/)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="6000,30000")
    options = parser.parse_args()
    for package in ("evalproto", "evaluators"):  # as a non-editable install would have
        compileall.compile_dir(ROOT / package, quiet=1)
    data = Path(options.data)
    sizes = [int(size) for size in options.sizes.split(",")]
    given = inputs(data, sizes)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        data_path = str(Path(work) / "inputs.json")
        Path(data_path).write_text(json.dumps(given), encoding="utf-8")
        peer = Peer(data_path)
        try:
            rows += corpus_rows(peer, given, sizes, options.rounds)
            rows += pairwise_rows(peer, given, options.rounds)
        finally:
            peer.close()
    rows.append(whole_process_row(data / "de-en", options.rounds))
    print(f"\n{'scenario':52} {'ours':>9} {'theirs':>9} {'ratio':>6} {'rounds':>13} "
          f"{'target':>7}")
    for label, target, row, check in rows:
        ratio = row["ours"] / row["theirs"]
        low, high = row["spread"]
        print(f"{label:52} {row['ours']:8.4f}s {row['theirs']:8.4f}s {ratio:6.3f} "
              f"{low:6.3f}-{high:<6.3f} <= {target:<5} {'met' if ratio <= target else 'NOT met'}"
              f"  {check}")
    return 0


def corpus_rows(peer: Peer, given: Dict[str, Any], sizes: List[int], rounds: int
                ) -> List[Tuple[str, float, Dict[str, Any], str]]:
    rows = []
    for size in sizes:
        corpus = given["corpora"][str(size)]
        refs = [[ref] for ref in corpus["refs"]]
        for name, metric in (("chrF", "chrf"), ("BLEU", "bleu")):
            with evalproto.load(metric) as scorer:
                row = in_turns(rounds, partial(timed, partial(corpus_score, scorer,
                                                              corpus["hyps"], refs)),
                               partial(peer.run, f"mojo_{metric}", str(size)))
            _, reference = peer.run(f"sacrebleu_{metric}", str(size))
            mine, mojo = row["ours_result"], row["theirs_result"]
            check = ("equal to mojo's and sacrebleu's" if mine == mojo == reference
                     else f"DIFFERENT: ours {mine}, mojo {mojo}, sacrebleu {reference}")
            rows.append((f"corpus {name}, {size:,} segments, vs sacrebleu-mojo",
                         TARGETS[f"corpus {name}"], row, check))
    return rows


def corpus_score(metric: Any, hyps: List[str], refs: List[List[str]]) -> float:
    return metric.corpus_score(hyps, refs).score


def pairwise_rows(peer: Peer, given: Dict[str, Any], rounds: int
                  ) -> List[Tuple[str, float, Dict[str, Any], str]]:
    batches, texts = given["batches"], given["bleu_texts"]
    with evalproto.load("chrf") as chrf, evalproto.load("bleu") as bleu:
        row = in_turns(rounds, lambda: timed(lambda: chrf.pairwise_scores(batches)),
                       lambda: peer.run("fastchrf_pairwise"))
        ours, fast = np.asarray(row["ours_result"]), np.asarray(row["theirs_result"])
        _, exact = peer.run("sacrebleu_pairwise_chrf_rows")
        checked = np.asarray(exact)
        same = (ours[0, :len(checked)] == checked).all()
        check = (f"{'equal to' if same else 'DIFFERENT from'} sacrebleu's in {checked.size:,} "
                 f"cells; fastchrf's differ from ours in {(ours != fast).sum():,} of "
                 f"{ours.size:,} cells (at most {np.abs(ours - fast).max():.2g})")
        chrf_row = ("pairwise chrF, 4 x 256 x 256, vs fastchrf", TARGETS["pairwise chrF"], row,
                    check)
        row = in_turns(max(3, rounds // 2), lambda: timed(lambda: bleu.pairwise_scores([texts])),
                       lambda: peer.run("sacrebleu_pairwise_bleu"))
        same = (np.asarray(row["ours_result"])[0] == np.asarray(row["theirs_result"])).all()
        check = f"{'equal to' if same else 'DIFFERENT from'} sacrebleu's in every cell"
        bleu_row = ("pairwise BLEU, 128 x 128, vs sacrebleu sentence_score loop",
                    TARGETS["pairwise BLEU"], row, check)
    return [chrf_row, bleu_row]


def whole_process_row(pair: Path, rounds: int) -> Tuple[str, float, Dict[str, Any], str]:
    refs = [str(pair / "de-en.ref.A.en"), str(pair / "de-en.ref.B.en")]
    hyp = str(pair / "de-en.hyp.LT22.en")
    ours = [sys.executable, "-m", "evalproto", "corpus-score", *refs, hyp, "-f", "json"]
    theirs = [str(PEERS / "bin" / "python"), "-m", "sacrebleu", *refs, "-i", hyp, "-m", "bleu",
              "-f", "json", "-w", "4"]

    def run(command: List[str]) -> Tuple[float, Any]:
        seconds, done = timed(lambda: subprocess.run(command, check=True, capture_output=True,
                                                     text=True))
        return seconds, done.stdout

    row = in_turns(rounds, lambda: run(ours), lambda: run(theirs))
    mine = json.loads(row["ours_result"])["score"]
    reference = json.loads(row["theirs_result"])["score"]
    check = ("equal to sacrebleu's (4 decimals)" if f"{mine:.4f}" == f"{reference:.4f}"
             else f"DIFFERENT: {mine} vs {reference}")
    segments = len(wmt_lines(Path(hyp)))
    return (f"corpus-score BLEU, whole process, {segments:,} x 2 refs, vs sacrebleu CLI",
            TARGETS["corpus-score BLEU, whole process"], row, check)


if __name__ == "__main__":
    sys.exit(main())
