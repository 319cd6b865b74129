"""The LM Challenge logs that docs/lm.md's examples read (tests/lm_fixture/logs), as
`lmc run` (lmchallenge 5.2, installed by tests/install-lmc) writes them with the n-gram
model of ngram_model.py: the first 12 lines of the German-English reference B, scored by
a model trained on reference A (`we.jsonl`, `wc.jsonl.gz`) and by one trained on its
first 30 lines only (`wc.small.jsonl.gz`). A test checks that the committed files are
what this writes.

    python tests/lm_fixture/lmc_logs.py    # rewrite tests/lm_fixture/logs
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List

from evalproto.readers.text import read_lines

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
DATA = ROOT / "tests" / "data"
LOGS = HERE / "logs"
LMC = ROOT / ".venv-lmc" / "bin" / "lmc"


def lines(name: str) -> List[str]:
    return read_lines(str(DATA / name))


def write_logs(directory: Path, lmc: Path = LMC) -> None:
    text = "\n".join(lines("de-en.ref.B.en")[:12]) + "\n"
    with tempfile.TemporaryDirectory() as work:
        models = {}
        for name, count in (("full", None), ("small", 30)):
            train = Path(work) / f"{name}.txt"
            train.write_text("\n".join(lines("de-en.ref.A.en")[:count]) + "\n", encoding="utf-8")
            models[name] = f"{sys.executable} {HERE / 'ngram_model.py'} {train}"
        for file_name, model, game in (("we.jsonl", "full", "we"), ("wc.jsonl.gz", "full", "wc"),
                                       ("wc.small.jsonl.gz", "small", "wc")):
            log = subprocess.run([str(lmc), "run", models[model], game], input=text.encode("utf-8"),
                                 capture_output=True, check=True).stdout
            path = directory / file_name
            if file_name.endswith(".gz"):
                with open(path, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as out:
                    out.write(log)
            else:
                path.write_bytes(log)


if __name__ == "__main__":
    LOGS.mkdir(exist_ok=True)
    write_logs(LOGS)
