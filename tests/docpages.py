"""The examples of the README and the docs/ pages, read as tests/test_docs_examples.py
and tests/service/test_service_docs.py run them: fenced blocks, and the `$ ` commands
of ```text blocks with their input and shown output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, NamedTuple, Tuple

ROOT = Path(__file__).parent.parent
SERVICE = "evalproto board "
"""A block with a command that uses the evaluation service needs a server: such blocks
are run by tests/service/test_service_docs.py, which starts one first."""


def fenced(page: str, language: str) -> List[Tuple[int, str]]:
    """(line number, text) of each fenced block of this language on a page."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return [(text.count("\n", 0, found.start()) + 1, found.group(1))
            for found in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.S | re.M)]


class Command(NamedTuple):
    page: str
    line: int
    command: str
    stdin: str
    shown: str


def commands(page: str, service: bool = False) -> List[Command]:
    """Every `$ ` command of a page, in order, with its input and its shown output: of
    the blocks that use a server (`service`), or of the others."""
    found = []
    for line, text in fenced(page, "text"):
        if not text.startswith("$ ") or (SERVICE in text) != service:
            continue
        lines = [entry + "\n" for entry in text.split("\n")[:-1]]  # at "\n" only
        at = 0
        while at < len(lines):
            first, command = at, lines[at][2:].rstrip("\n")
            while command.endswith("\\") and at + 1 < len(lines):  # goes on below
                at += 1
                command = command[:-1].rstrip() + " " + lines[at].strip()
            at += 1
            rest = []
            while at < len(lines) and not lines[at].startswith("$ "):
                rest.append(lines[at])
                at += 1
            stdin = "".join(entry[2:] for entry in rest if entry.startswith("> "))
            shown = "".join(entry for entry in rest if not entry.startswith("> "))
            found.append(Command(page, line + 1 + first, command, stdin, shown))
    return found


def every_command(page: str) -> List[Command]:
    """Every `$ ` command of a page, in order, whether it needs a server or not."""
    return sorted([*commands(page), *commands(page, service=True)],
                  key=lambda command: command.line)
