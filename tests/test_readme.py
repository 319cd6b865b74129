"""The README's examples are true: its Python sessions run as doctests, its Python
programs run, and the commands it shows print what it shows, byte for byte."""

import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest
from conftest import script

import evalproto

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> List[Tuple[int, str]]:
    """(line number, text) of each fenced block in the README of this language."""
    found = []
    for match in re.finditer(rf"^```{language}\n(.*?)^```$", README, re.S | re.M):
        found.append((README.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def command_examples() -> List[Tuple[int, str, str]]:
    """(line, command, shown output) of every `$ ` example shown whole (no "...")."""
    examples = []
    for line, text in blocks("text"):
        if not text.startswith("$ ") or "..." in text:
            continue
        command, _, output = re.sub(r"\\\n\s*", "", text[2:]).partition("\n")
        examples.append((line, command, output))
    return examples


SESSIONS = [(line, text) for line, text in blocks("python") if ">>>" in text]
PROGRAMS = [(line, text) for line, text in blocks("python") if ">>>" not in text]
COMMANDS = command_examples()


def test_the_readme_has_examples_of_each_kind():
    assert len(SESSIONS) >= 1 and len(PROGRAMS) >= 1 and len(COMMANDS) >= 4


@pytest.mark.parametrize("line, text", SESSIONS, ids=[f"line {line}" for line, _ in SESSIONS])
def test_python_sessions(line, text, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PATH", f"{Path(script('bleu-evaluator')).parent}{os.pathsep}"
                               f"{os.environ['PATH']}")
    test = doctest.DocTestParser().get_doctest(text, {}, "README.md", "README.md", line)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=sys.stdout.write)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize("line, text", PROGRAMS, ids=[f"line {line}" for line, _ in PROGRAMS])
def test_python_programs_define_working_evaluators(line, text):
    """Each program runs (as an import, not as __main__); every evaluator it defines
    gives a finite score to a real segment."""
    namespace = {"__name__": "readme_example"}
    exec(compile(text, f"README.md, line {line}", "exec"), namespace)
    defined = [value for value in namespace.values() if isinstance(value, type)
               and issubclass(value, evalproto.Evaluator) and value is not evalproto.Evaluator]
    assert defined
    for evaluator in defined:
        rows = evaluator().stats_many([(["The cat sat on the mat."], "the cat sat")])
        assert np.isfinite(evaluator().score(rows.sum(axis=0)))


@pytest.mark.parametrize("line, command, shown", COMMANDS,
                         ids=[f"line {line}" for line, _, _ in COMMANDS])
def test_commands_print_what_the_readme_shows(line, command, shown):
    words = shlex.split(command)
    if words[0] == "bleu-evaluator":  # a session: '>' lines are what the tuner sends
        requests = "".join(entry[2:] + "\n" for entry in shown.splitlines()
                           if entry.startswith("> "))
        shown = "".join(entry + "\n" for entry in shown.splitlines() if not entry.startswith("> "))
        words[0] = script("bleu-evaluator")
    else:
        requests = None
        words[0] = script(words[0])
    completed = subprocess.run(words, cwd=ROOT, input=requests, capture_output=True, text=True,
                               timeout=300)
    assert completed.stdout == shown
