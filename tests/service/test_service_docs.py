"""The service's examples are true: docs/service.md's and docs/dynaboard.md's sessions
and the README's organiser's block, their commands run in order by a shell against a real `evalproto
serve` (started as the pages say, on the default SQLite file, with the admin token it
makes), in a directory holding a copy of tests/data, print what the pages show, byte
for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from docpages import ROOT, Command, commands, every_command

from .conftest import Server

SESSIONS = {"docs/service.md": every_command, "docs/dynaboard.md": every_command,
            "README.md": lambda page: commands(page, service=True)}
"""The pages, and the commands of each that run against a server."""


def run_session(page: str, directory: Path) -> List[Tuple[Command, str]]:
    """(command, what it printed) of each command of the page's session."""
    shutil.copytree(ROOT / "tests" / "data", directory / "tests" / "data")
    server = Server(None, directory, env={"EVALPROTO_ADMIN_TOKEN": None}).start()
    try:
        env: Dict[str, str] = {
            **os.environ, "EVALPROTO_SERVER": server.address,
            "EVALPROTO_TOKEN": (directory / "evalproto.db.admin-token").read_text().strip(),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        env.pop("EVALPROTO_ADMIN_TOKEN", None)
        results = []
        for command in SESSIONS[page](page):
            done = subprocess.run(["bash", "-c", command.command], cwd=directory, env=env,
                                  input=command.stdin, capture_output=True, text=True,
                                  timeout=300)
            results.append((command, done.stdout))
    finally:
        assert server.stop() == 0
    return results


def test_the_guide_has_the_whole_sequence():
    said = " ".join(command.command for command in every_command("docs/service.md"))
    for step in ("jsonl dataset", "jsonl predictions", "board add-task", "board add-team",
                 "board add-dataset", "board submit", "board leaderboard", "board add-metric",
                 "board export", "reduce"):
        assert f"evalproto {step}" in said


def test_the_readme_shows_a_whole_session():
    said = [command.command for command in commands("README.md", service=True)]
    for step in ("board add-task", "jsonl dataset", "board add-dataset", "board add-team",
                 "jsonl predictions", "board submit", "board leaderboard"):
        assert any(f"evalproto {step}" in command for command in said), step


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(SESSIONS))
def test_the_session_prints_what_the_page_shows(tmp_path, page):
    for command, printed in run_session(page, tmp_path):
        assert printed == command.shown, f"{page}, line {command.line}: {command.command}"


if __name__ == "__main__":  # print the sessions' outputs, to write them into the pages
    import tempfile

    for page in sys.argv[1:] or sorted(SESSIONS):
        for command, printed in run_session(page, Path(tempfile.mkdtemp())):
            print(f"--- {page}, line {command.line}: $ {command.command}\n{printed}", end="")
