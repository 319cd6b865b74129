"""`evalproto serve` and `evalproto board` as a user meets them: the admin token made
at the first start (mode 0600, its path printed, no token ever in the log), errors in
one line (exit 1) and usage errors (exit 2), the commands without the serve extra, the
API's description, and the other commands' start-up untouched by the service."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import httpx
import pytest

from .conftest import ADMIN, DATA, Server, dataset_rows, jsonl, lines, prediction_rows


def run(*args: str, cwd: Path, env: dict = None, prelude: str = "") -> subprocess.CompletedProcess:
    """`evalproto ARGS` as a process (after `prelude`, Python run first)."""
    code = f"{prelude}\nfrom evalproto.cli.launch import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_the_admin_token_is_made_at_the_first_start_and_never_logged(tmp_path):
    database = tmp_path / "board.db"
    server = Server(str(database), tmp_path, env={"EVALPROTO_ADMIN_TOKEN": None}).start()
    try:
        token_file = tmp_path / "board.db.admin-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert f"admin token in {token_file} (mode 0600)" in server.text()
        admin = token_file.read_text().strip()
        assert len(admin) >= 40
        team = server.ok("POST", "/api/teams", admin, json={"name": "lab-a"})["token"]
        assert server.request("POST", "/api/teams", ADMIN, json={"name": "b"}).status_code == 403
        dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows()[:20])
        server.ok("POST", "/api/tasks", admin, json={"name": "mt", "metrics": [{"spec": "bleu"}]})
        server.ok("POST", "/api/tasks/mt/datasets/ds", admin, content=dataset.read_bytes())
        server.ok("POST", "/api/tasks/mt/datasets/ds/models/m", team, content=jsonl(
            tmp_path / "p.jsonl", prediction_rows(lines("de-en.hyp.LT22.en")[:20])).read_bytes())
        server.request("POST", "/api/teams", team + "x", json={"name": "c"})
    finally:
        assert server.stop() == 0
    again = Server(str(database), tmp_path, env={"EVALPROTO_ADMIN_TOKEN": None}).start()
    try:
        assert token_file.read_text().strip() == admin  # kept, and still the admin's
        assert again.request("POST", "/api/teams", admin, json={"name": "lab-b"}).status_code == 201
        assert f"admin token in {token_file}, written at the first start" in again.text()
    finally:
        assert again.stop() == 0
    logs = "".join(path.read_text() for path in tmp_path.glob("serve-*.log"))
    assert admin not in logs and team not in logs and team[:12] not in logs


def test_errors_are_one_line_and_usage_errors_exit_2(tmp_path, start_server):
    server = start_server(str(tmp_path / "board.db"))
    done = server.board("submit", "mt", "m", "ds", str(tmp_path / "missing.jsonl"))
    assert (done.exit_code, done.output) == (
        1, f"Error: {tmp_path / 'missing.jsonl'}: cannot read: No such file or directory\n")
    done = server.board("leaderboard", "nope")
    assert (done.exit_code, done.output) == (1, "Error: no task 'nope'\n")
    done = server.board("add-team", "lab-a", token=None)
    assert (done.exit_code, done.output) == (
        1, "Error: adding a team needs the admin token (--token or EVALPROTO_TOKEN)\n")
    assert server.board("add-task", "mt").exit_code == 2
    assert server.board("add-metric", "mt").exit_code == 2
    assert server.board("add-metric", "mt", "ter", "-e", "x").exit_code == 2
    assert server.board("leaderboard", "mt", "-f", "xml").exit_code == 2
    done = run("board", "leaderboard", "mt", "--server", "http://127.0.0.1:1", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: cannot reach the evaluation service at "
                                  "http://127.0.0.1:1 (")
    assert done.stderr.count("\n") == 1


def test_serve_refuses_what_it_cannot_do_in_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "--port", str(port), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}: ")
    assert done.stderr.count("\n") == 1
    done = run("serve", "--max-upload", "lots", cwd=tmp_path)
    assert done.returncode == 2 and "expected a size such as 64M" in done.stderr
    done = run("serve", "--port", "0", cwd=tmp_path, env={"EVALPROTO_ADMIN_TOKEN": "short"})
    assert done.returncode == 1
    assert done.stderr.startswith("Error: EVALPROTO_ADMIN_TOKEN is too short to be a token")
    done = run("serve", "--port", "0", cwd=tmp_path,
               env={"EVALPROTO_ADMIN_TOKEN": "é" * 20})
    assert done.returncode == 1
    assert done.stderr == ("Error: EVALPROTO_ADMIN_TOKEN is not a token: it holds a "
                           "character that is not ASCII; a token is printable ASCII without "
                           "spaces, as `evalproto board add-team` and the server's admin "
                           "token file give it\n")
    assert list(tmp_path.glob("*.admin-token")) == []


@pytest.mark.parametrize("token, holds", [
    ("secrét-token", "a character that is not ASCII"),
    ("secret\ntoken", "a line break"),
    ("secret token", "a space"),
    ("secret\x7ftoken", "a control character"),
])
@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_token_no_header_can_carry_is_a_bad_token_not_a_crash(tmp_path, token, holds, given):
    """A token with a character outside printable ASCII was an internal error
    (UnicodeEncodeError), and one with a line break "cannot reach the evaluation
    service" (httpx refuses the header): it is a bad token, and the message does not
    show it. No server is needed to say so."""
    args = ["board", "leaderboard", "mt", "--server", "http://127.0.0.1:9"]
    env = {"EVALPROTO_TOKEN": token} if given == "environment" else {}
    done = run(*args, *(["--token", token] if given == "option" else []), cwd=tmp_path,
               env=env)
    assert done.returncode == 1
    assert done.stderr == (f"Error: the token (--token or EVALPROTO_TOKEN) is not a token: "
                           f"it holds {holds}; a token is printable ASCII without spaces, as "
                           f"`evalproto board add-team` and the server's admin token file "
                           f"give it\n")
    assert done.stdout == ""


BLOCKED = "import sys\nfor name in {names}:\n    sys.modules[name] = None  # not installed\n"


@pytest.mark.parametrize("command, missing", [
    (["serve"], ("fastapi", "uvicorn", "sqlalchemy")),
    (["board", "leaderboard", "mt"], ("httpx",)),
])
def test_without_the_serve_extra_the_commands_say_how_to_install_it(command, missing,
                                                                      tmp_path):
    done = run(*command, cwd=tmp_path, prelude=BLOCKED.format(names=missing))
    assert done.returncode == 1
    assert done.stderr.endswith("not installed): pip install 'evalproto[serve]'\n")
    assert done.stderr.startswith("Error: evalproto ") and done.stderr.count("\n") == 1
    assert run(command[0], "--help", cwd=tmp_path,
               prelude=BLOCKED.format(names=missing)).returncode == 0


def test_other_commands_never_import_the_service(tmp_path):
    report = ("import atexit, sys\natexit.register(lambda: print(sorted(name for name in "
              "('fastapi', 'uvicorn', 'sqlalchemy', 'httpx', 'alembic') if name in "
              "sys.modules), file=sys.stderr))")
    done = run("corpus-score", str(DATA / "de-en.ref.A.en"), str(DATA / "de-en.hyp.LT22.en"),
               cwd=tmp_path, prelude=report)
    assert done.returncode == 0 and done.stderr == "[]\n"
    listed = run("--help", cwd=tmp_path)
    assert "  serve " in listed.stdout and "  board " in listed.stdout


def test_the_api_describes_itself(tmp_path, start_server):
    server = start_server(str(tmp_path / "board.db"))
    described = httpx.get(f"{server.address}/openapi.json").json()
    assert described["info"]["title"] == "evalproto evaluation service"
    for path in ("/api/tasks", "/api/tasks/{task}/leaderboard",
                 "/api/tasks/{task}/datasets/{dataset}/models/{model}",
                 "/api/tasks/{task}/metrics", "/api/teams", "/api/submissions/{submission}",
                 "/api/tasks/{task}/datasets/{dataset}/stats/{model}"):
        assert path in described["paths"]


def test_the_test_extra_installs_the_serve_extra():
    """CI installs `.[test,...]` and runs these tests: the serve extra must be in it."""
    import configparser

    config = configparser.ConfigParser()
    config.read(Path(__file__).parent.parent.parent / "setup.cfg")
    extras = config["options.extras_require"]
    serve = set(extras["serve"].split())
    assert serve and serve <= set(extras["test"].split())
    assert not {package.split(">")[0] for package in serve} & set(
        config["options"]["install_requires"].lower().split())


def test_the_text_leaderboard_gives_each_datasets_signature():
    """Datasets with one reference and with two: bleu's signatures differ (nrefs)."""
    from evalproto.reports.leaderboard import format_leaderboard

    def section(name: str, signature: str) -> Dict[str, Any]:
        return {"dataset": name, "round": None, "n": 3, "entries": [{
            "model": "m", "team": "t", "metric": "bleu", "status": "done", "score": 30.0,
            "half_width": 1.0, "rank": [1, 1], "signature": signature, "tags": {}}]}

    board = {"task": "mt", "perf": "bleu", "metrics": [{"metric": "bleu", "name": "BLEU"}],
             "datasets": [section("one", "nrefs:1|bleu"), section("two", "nrefs:2|bleu"),
                          section("three", "nrefs:1|bleu")]}
    text = format_leaderboard(board)
    assert "bleu on one, three: nrefs:1|bleu\n" in text, text
    assert "bleu on two: nrefs:2|bleu\n" in text, text
    board["datasets"] = board["datasets"][::2]
    assert "\nbleu: nrefs:1|bleu\n" in format_leaderboard(board)
