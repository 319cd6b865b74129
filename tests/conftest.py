"""Shared paths and helpers for the test suite."""

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Union

import pytest
from click.testing import CliRunner

from evalproto.cli import main

DATA = Path(__file__).parent / "data"
DE_EN_REFS = [str(DATA / "de-en.ref.A.en"), str(DATA / "de-en.ref.B.en")]
DE_EN_HYP = str(DATA / "de-en.hyp.LT22.en")
DE_EN_HYP2 = str(DATA / "de-en.hyp.Lan-Bridge.en")
EN_DE_REFS = [str(DATA / "en-de.ref.A.de"), str(DATA / "en-de.ref.B.de")]
EN_DE_HYP = str(DATA / "en-de.hyp.Online-A.de")
MULTI_REFS = [str(DATA / "multilingual.ref.A"), str(DATA / "multilingual.ref.B")]
MULTI_HYP = str(DATA / "multilingual.hyp")


def read_lines(path: str) -> List[str]:
    """Lines as the sacrebleu command line reads them: split on newlines, rstripped."""
    with open(path, encoding="utf-8", newline="\n") as stream:
        return [line.rstrip() for line in stream]


def run_cli(*args: str, input: str = None):
    """Run `evalproto ARGS` through click's CliRunner and return the result."""
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def json_rows(output: str) -> List[dict]:
    return [json.loads(line) for line in output.splitlines()]


def serve(command: List[str], requests: Union[str, bytes],
          timeout: float = 60) -> subprocess.CompletedProcess:
    """Run an evaluator command on the given requests and collect everything."""
    data = requests.encode("utf-8") if isinstance(requests, str) else requests
    return subprocess.run(command, input=data, capture_output=True, timeout=timeout)


def script(name: str) -> str:
    """An installed console script, found beside this interpreter (as pip installs it)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"console script {name} is not installed; run pip install -e ."
    return found


@pytest.fixture
def bleu_evaluator() -> List[str]:
    return [script("bleu-evaluator")]
