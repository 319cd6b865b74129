"""cdec's own client as a peer: its fast_score runs bleu-evaluator and gets sacrebleu's BLEU.

cdec's `fast_score -m METEOR` starts an external evaluator through mteval/ns_ext.cc with
the command `java -Xmx1536m -jar METEOR_JAR - - -mira ...`. This script puts a `java`
on PATH that execs `bleu-evaluator` instead, then checks two things:

1. fast_score's score equals sacrebleu's, to the 6 significant digits cdec prints;
2. a segment with no reference makes fast_score fail loudly (non-zero exit), because
   bleu-evaluator exits on the bad request, instead of the segment being dropped.

It needs a fast_score binary built from cdec with METEOR_JAR defined (any existing file
will do as the jar). Usage:

    python bench/cdec_peer.py --fast-score /path/to/cdec/mteval/fast_score
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sacrebleu.metrics import BLEU

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def lines(path: Path) -> list[str]:
    return [line.rstrip() for line in path.read_text(encoding="utf-8").split("\n")[:-1]]


def fast_score(binary: str, refs: list[Path], hyp: Path, shim_dir: str
               ) -> subprocess.CompletedProcess:
    command = [binary, *(arg for ref in refs for arg in ("-r", str(ref))), "-m", "METEOR",
               "-i", str(hyp)]
    env = {**os.environ, "PATH": shim_dir + os.pathsep + os.environ["PATH"]}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fast-score", required=True, help="path to cdec's fast_score")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="directory with de-en.ref.A.en, de-en.ref.B.en, de-en.hyp.LT22.en")
    args = parser.parse_args()
    evaluator = shutil.which("bleu-evaluator")
    if evaluator is None:
        sys.exit("bleu-evaluator is not on PATH; install evalproto first")
    refs = [args.data / "de-en.ref.A.en", args.data / "de-en.ref.B.en"]
    hyp = args.data / "de-en.hyp.LT22.en"
    failures = 0
    with tempfile.TemporaryDirectory() as shim_dir:
        java = Path(shim_dir) / "java"
        java.write_text(f"#!/bin/sh\nexec {evaluator}\n")
        java.chmod(0o755)

        run = fast_score(args.fast_score, refs, hyp, shim_dir)
        expected = BLEU().corpus_score(lines(hyp), [lines(ref) for ref in refs]).score
        agrees = run.returncode == 0 and f"{float(run.stdout):.6g}" == f"{expected:.6g}"
        print(f"score through bleu-evaluator: cdec {run.stdout.strip()}, "
              f"sacrebleu {expected:.6f}: {'PASS' if agrees else 'FAIL'}")
        failures += not agrees

        no_reference = Path(shim_dir) / "ref.with-empty-line"
        ref_lines = lines(refs[0])
        ref_lines[6] = ""  # cdec skips empty reference lines: segment 7 has no reference
        no_reference.write_text("\n".join(ref_lines) + "\n", encoding="utf-8")
        run = fast_score(args.fast_score, [no_reference], hyp, shim_dir)
        loud = run.returncode != 0 and "at least one reference" in run.stderr
        print(f"segment without a reference: cdec exit status {run.returncode}: "
              f"{'PASS' if loud else 'FAIL'}")
        failures += not loud
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
