"""The overhead of running a model as the evaluation service does (evalproto.sources.
models.run_model: its input written by a thread, every reply read and checked, its
memory read every 10 ms) against the same model run by hand (its input from a file,
its output to another), on 1,000 examples (target: under 10%).

Two models: one that only echoes a label (the runner's overhead at its largest, in
proportion), and one that does a little work for each example (1 ms), as any real
model does more. Alternating runs; prints the medians and their ratio.

    python3 bench/models.py [--examples 1000] [--rounds 21]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from evalproto.sources.models import run_model

MODEL = textwrap.dedent("""
    import json, sys, time
    work = float(sys.argv[1])
    for line in sys.stdin:
        example = json.loads(line)
        if work:
            end = time.perf_counter() + work
            while time.perf_counter() < end:
                pass
        short = len(example["hypothesis"].split()) <= len(example["context"].split())
        print(json.dumps({"id": example["id"], "pred": "entailment" if short else "neutral",
                          "prob": [0.9, 0.1] if short else [0.3, 0.7]}), flush=True)
""")


def examples(count: int) -> List[Tuple[str, Dict[str, str]]]:
    words = "the a cat dog sat ran on under mat field quickly slowly green wide".split()
    return [(f"e{number}", {
        "context": " ".join(words[(number + k) % len(words)] for k in range(8 + number % 20)),
        "hypothesis": " ".join(words[(3 * number + k) % len(words)]
                               for k in range(4 + number % 12))})
        for number in range(count)]


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=21)
    options = parser.parse_args()
    given = examples(options.examples)
    with tempfile.TemporaryDirectory() as directory:
        model = Path(directory) / "model.py"
        model.write_text(MODEL)
        inputs = Path(directory) / "inputs.jsonl"
        inputs.write_text("".join(json.dumps({"id": key, **fields}) + "\n"
                                  for key, fields in given))
        print(f"{options.examples} examples, medians of {options.rounds} alternating runs")
        for work in (0.0, 0.001):
            command = [sys.executable, str(model), str(work)]

            def by_hand(command: List[str] = command) -> None:
                with open(inputs, "rb") as stream:
                    subprocess.run(command, stdin=stream, stdout=subprocess.DEVNULL,
                                   check=True)

            def runner(command: List[str] = command) -> None:
                run_model(" ".join(command), given, ["prob"], timeout=60)

            hand, ran = [], []
            for _ in range(options.rounds):
                hand.append(timed(by_hand))
                ran.append(timed(runner))
            hand_median, ran_median = statistics.median(hand), statistics.median(ran)
            print(f"model doing {work * 1000:g} ms an example: by hand {hand_median:.3f} s, "
                  f"run_model {ran_median:.3f} s, overhead "
                  f"{(ran_median / hand_median - 1) * 100:+.1f}% (target < 10%)")


if __name__ == "__main__":
    main()
