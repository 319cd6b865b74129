"""docs/service.md's session is true: its commands, run in order by a shell against a
real `evalproto serve` (started as the page says, on the default SQLite file, with the
admin token it makes), print what the page shows, byte for byte."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from .conftest import Server, dataset_rows, jsonl, lines, prediction_rows

GUIDE = Path(__file__).parent.parent.parent / "docs" / "service.md"


def session() -> List[Tuple[int, str, str]]:
    """(line, command, shown output) of every `$ ` example of the guide, in order."""
    text = GUIDE.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"^```text\n(.*?)^```$", text, re.S | re.M):
        block = match.group(1)
        if not block.startswith("$ "):
            continue
        command, _, output = re.sub(r"\\\n\s*", "", block[2:]).partition("\n")
        found.append((text.count("\n", 0, match.start()) + 1, command, output))
    return found


def prepare(directory: Path) -> None:
    """The files the session uses: a dataset of WMT22's German-English excerpt (one
    reference, tags) and two systems' predictions."""
    jsonl(directory / "de-en.jsonl", dataset_rows())
    jsonl(directory / "lt22.jsonl", prediction_rows(lines("de-en.hyp.LT22.en")))
    jsonl(directory / "lan-bridge.jsonl", prediction_rows(lines("de-en.hyp.Lan-Bridge.en")))


def run_session(directory: Path) -> List[Tuple[int, str, str, str]]:
    """(line, command, shown, printed) of each command of the session."""
    prepare(directory)
    server = Server(None, directory, env={"EVALPROTO_ADMIN_TOKEN": None}).start()
    try:
        env: Dict[str, str] = {
            **os.environ, "EVALPROTO_SERVER": server.address,
            "EVALPROTO_TOKEN": (directory / "evalproto.db.admin-token").read_text().strip(),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        env.pop("EVALPROTO_ADMIN_TOKEN", None)
        results = []
        for line, command, shown in session():
            done = subprocess.run(["bash", "-c", command], cwd=directory, env=env,
                                  capture_output=True, text=True, timeout=300)
            results.append((line, command, shown, done.stdout))
    finally:
        assert server.stop() == 0
    return results


def test_the_guide_has_the_issues_sequence():
    commands = " ".join(command for _, command, _ in session())
    for step in ("board add-task", "board add-team", "board add-dataset", "board submit",
                 "board leaderboard", "board add-metric", "board export", "reduce"):
        assert f"evalproto {step}" in commands


def test_the_guides_session_prints_what_it_shows(tmp_path):
    for line, command, shown, printed in run_session(tmp_path):
        assert printed == shown, f"docs/service.md, line {line}: {command}"


if __name__ == "__main__":  # print the session's outputs, to write them into the guide
    import tempfile

    for line, command, _, printed in run_session(Path(tempfile.mkdtemp())):
        print(f"--- line {line}: $ {command}\n{printed}", end="")
