"""The evaluation service's tests run real parts: `evalproto serve` started as a process
on a free loopback port, on a SQLite file and on a PostgreSQL server that these tests
start (initdb and pg_ctl in a temporary directory, as an unprivileged user), stopped by
the tests. The same tests run on both databases (the `database` fixture)."""

from __future__ import annotations

import glob
import json
import logging
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

import httpx
import pytest
from click.testing import CliRunner

from evalproto.cli.main import main

DATA = Path(__file__).parent.parent / "data"
ADMIN = "admin-token-for-the-tests-0123456789"
DEADLINE = 120.0
"""Seconds any wait of these tests may take at most (a busy machine is slow)."""


def until(condition: Any, what: str, seconds: float = DEADLINE, every: float = 0.05) -> Any:
    """Poll `condition()` until it returns something true; that value."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(every)


# -- PostgreSQL -----------------------------------------------------------------------------

def postgres_bin() -> Path:
    """Debian's PostgreSQL programs (not on PATH: /usr/lib/postgresql/VERSION/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda path: int(Path(path).parent.parent.name))
    if not found and shutil.which("pg_ctl"):
        found = [str(shutil.which("pg_ctl"))]
    if not found:
        pytest.fail("the service's tests need PostgreSQL's programs: apt-get install -y "
                    "postgresql")
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Postgres:
    """A PostgreSQL server in a temporary directory, run by an unprivileged user (initdb
    refuses root): the `postgres` user of Debian's package when the tests run as root."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.user = None if os.geteuid() else _unprivileged_user()
        self.directory = Path(tempfile.mkdtemp(prefix="evalproto-pg-"))
        if self.user:
            record = pwd.getpwnam(self.user)
            os.chown(self.directory, record.pw_uid, record.pw_gid)
        self.port = free_port()
        self._databases = 0
        data = self.directory / "data"
        self._run("initdb", "-D", str(data), "-U", "evalproto", "--auth=trust", "-E", "UTF8",
                  "--no-sync", "--no-instructions")
        self._run("pg_ctl", "-D", str(data), "-l", str(self.directory / "log"), "-w", "-t", "60",
                  "-o", f"-h 127.0.0.1 -p {self.port} -k {self.directory} -F", "start")
        # stopped however this process ends (a killed pytest runs no teardown)
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(self.directory),
             *self._command("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _command(self, program: str, *args: str) -> List[str]:
        command = [str(self.bin / program), *args]
        return ["runuser", "-u", self.user, "--", *command] if self.user else command

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(self._command(program, *args), capture_output=True, text=True,
                              timeout=DEADLINE, cwd=self.directory)
        assert done.returncode == 0, f"{program} failed: {done.stderr}{done.stdout}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://evalproto@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        import psycopg

        self._databases += 1
        name = f"board{self._databases}"
        with psycopg.connect(self.url().replace("+psycopg", ""), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")  # a name made here, not input
        return self.url(name)

    def stop(self) -> None:
        self._watchdog.kill()
        self._watchdog.wait()
        try:
            self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w",
                      "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


_WATCHDOG = """
import shutil, subprocess, sys, time
parent, directory, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False

while alive(parent):
    time.sleep(0.5)
subprocess.run(stop, capture_output=True, timeout=120)
shutil.rmtree(directory, ignore_errors=True)
"""
"""Run beside a test server: once the process that started it has ended, stop the
server (argv: that process's pid, the server's directory, the command that stops it)."""


def _unprivileged_user() -> str:
    """A user that is not root to run PostgreSQL: Debian's `postgres`, else one made
    for the tests."""
    for name in ("postgres", "evalproto-test"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "evalproto-test"], check=True)
    return "evalproto-test"


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    server = Postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def database(request: Any, tmp_path: Path) -> str:
    """The URL of a new, empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'board.db'}"
    return request.getfixturevalue("postgres").new_database()


# -- the server -------------------------------------------------------------------------------

class Server:
    """`evalproto serve` as a process, on a free port of 127.0.0.1; its log in a file."""

    def __init__(self, url: Optional[str], directory: Path, *options: str,
                 env: Optional[Dict[str, Optional[str]]] = None) -> None:
        """`url` None: the default database, evalproto.db in `directory`. A None in
        `env` takes that variable away."""
        self.url = url or f"sqlite:///{directory / 'evalproto.db'}"
        self.database = ["--db", url] if url else []
        self.directory = directory
        self.options = options
        self.env = {**os.environ, "EVALPROTO_ADMIN_TOKEN": ADMIN}
        for name, value in (env or {}).items():
            if value is None:
                self.env.pop(name, None)
            else:
                self.env[name] = value
        self.log = directory / f"serve-{time.monotonic_ns()}.log"
        self.process: Optional[subprocess.Popen] = None
        self.address = ""

    def start(self) -> Server:
        self.log = self.directory / f"serve-{time.monotonic_ns()}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "evalproto", "serve", *self.database, "--port", "0",
                 *self.options], cwd=self.directory, env=self.env, stdout=log, stderr=log)
        found = until(self._listening, "the server to listen")
        self.address = found
        until(lambda: self._answers(), "the server to answer")
        return self

    def _listening(self) -> Optional[str]:
        assert self.process is not None
        text = self.log.read_text(errors="replace")
        if self.process.poll() is not None:
            raise AssertionError(f"evalproto serve exited with {self.process.returncode}:\n"
                                 f"{text}")
        found = re.search(r"listening on (http://[0-9.]+:[0-9]+)", text)
        return found.group(1) if found else None

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.address}/api", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> int:
        """SIGTERM, and the exit status once it has stopped."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("evalproto serve did not stop on SIGTERM") from None

    def kill(self) -> None:
        """kill -9, as a crash."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def children(self) -> List[int]:
        """The server's child processes (its job workers)."""
        found = []
        for task in Path(f"/proc/{self.pid}/task").glob("*"):
            try:
                found += [int(pid) for pid in (task / "children").read_text().split()]
            except FileNotFoundError:
                continue
        return found

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    # -- requests ------------------------------------------------------------------------

    def request(self, method: str, path: str, token: Optional[str] = ADMIN,
                headers: Optional[Dict[str, str]] = None, **options: Any) -> httpx.Response:
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        sent.update(headers or {})
        options.setdefault("timeout", DEADLINE)
        return httpx.request(method, f"{self.address}{path}", headers=sent, **options)

    def ok(self, method: str, path: str, token: Optional[str] = ADMIN, **options: Any) -> Any:
        response = self.request(method, path, token, **options)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json()

    def board(self, *args: str, token: Optional[str] = ADMIN) -> Any:
        """`evalproto board ARGS` against this server (click's runner, in process)."""
        env = {"EVALPROTO_SERVER": self.address, "EVALPROTO_TOKEN": token or ""}
        return CliRunner().invoke(main, ["board", *args], env=env, catch_exceptions=False)

    def wait(self, task: str) -> None:
        until(lambda: (lambda jobs: not jobs["queued"] and not jobs["running"])(
            self.ok("GET", f"/api/tasks/{task}/jobs")), f"the jobs of {task}")

    def leaderboard(self, task: str, dataset: Optional[str] = None) -> List[Dict[str, Any]]:
        """The entries of a task's leaderboard."""
        params = {"dataset": dataset} if dataset else {}
        board = self.ok("GET", f"/api/tasks/{task}/leaderboard", params=params)
        return [entry for section in board["datasets"] for entry in section["entries"]]


class InProcess:
    """The service's application in this process, through Starlette's TestClient on
    `create_app` over a real database (a SQLite file, or a PostgreSQL database): its
    lifespan starts the real job workers, and requests take the real middleware,
    routes and templates, without a port or a process to start. The same requests as
    Server's; what needs a process (signals, kill -9, the CLI) takes a Server."""

    address = "http://testserver"

    def __init__(self, url: str, *, jobs: int = 1, max_upload: Optional[int] = None,
                 timeout: Optional[float] = None, instance_memory: float = 16.0) -> None:
        from evalproto.service.context import MAX_UPLOAD
        from evalproto.service.database import database_url
        from evalproto.sources.process import DEFAULT_TIMEOUT

        self.url = url
        self.settings = (database_url(url), jobs, None, max_upload or MAX_UPLOAD,
                         timeout if timeout is not None else DEFAULT_TIMEOUT, instance_memory)
        self.client: Any = None
        self.log = _Log()

    def start(self) -> InProcess:
        from starlette.testclient import TestClient

        from evalproto.service import app

        logging.getLogger("evalproto.service").addHandler(self.log)
        previous = os.environ.get("EVALPROTO_ADMIN_TOKEN")
        os.environ["EVALPROTO_ADMIN_TOKEN"] = ADMIN
        try:
            prepared = app.prepare(app.Settings(*self.settings))
        finally:
            if previous is None:
                os.environ.pop("EVALPROTO_ADMIN_TOKEN")
            else:
                os.environ["EVALPROTO_ADMIN_TOKEN"] = previous
        self.service = prepared.service
        self.client = TestClient(app.create_app(prepared.service), base_url=self.address,
                                 raise_server_exceptions=False)
        self.client.__enter__()
        return self

    def stop(self) -> int:
        """The application's end (its workers stopped); 0, as a server's exit status."""
        if self.client is not None:
            self.client.__exit__(None, None, None)
            self.client = None
            self.service.engine.dispose()
        logging.getLogger("evalproto.service").removeHandler(self.log)
        return 0

    def text(self) -> str:
        """The service's log lines so far."""
        return self.log.text()

    def request(self, method: str, path: str, token: Optional[str] = ADMIN,
                headers: Optional[Dict[str, str]] = None, **options: Any) -> httpx.Response:
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        sent.update(headers or {})
        options.setdefault("follow_redirects", False)
        options.pop("timeout", None)  # in process, nothing to wait for
        response: httpx.Response = self.client.request(method, path, headers=sent, **options)
        return response

    def board(self, *args: str, token: Optional[str] = ADMIN) -> Any:
        """`evalproto board ARGS` (click's runner, in process), its HTTP client's
        requests answered by this application."""
        from unittest import mock

        from evalproto.service import client

        application = self.client

        class Forwarded:
            """What the board's client asks of httpx.Client, through the test client."""

            def __init__(self, headers: Dict[str, str], **ignored: Any) -> None:
                self.headers = headers

            def request(self, method: str, path: str, **options: Any) -> Any:
                headers = {**self.headers, **options.pop("headers", {})}
                return application.request(method, path, headers=headers,
                                           follow_redirects=False, **options)

            def close(self) -> None:
                pass

        env = {"EVALPROTO_SERVER": self.address, "EVALPROTO_TOKEN": token or ""}
        with mock.patch.object(client.httpx, "Client", Forwarded):
            return CliRunner().invoke(main, ["board", *args], env=env,
                                      catch_exceptions=False)

    ok = Server.ok
    wait = Server.wait
    leaderboard = Server.leaderboard


class _Log(logging.Handler):
    """The lines the service logs, as `evalproto serve` writes them on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: List[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s:  evalproto: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


def served(kind: str, request: Any, directory: Path, *options: str,
           **settings: Any) -> Any:
    """A service on a database of `kind`: on SQLite, the application in this process
    (InProcess, with `settings`); on PostgreSQL, `evalproto serve` (a Server, with
    `options`), so that both doors are tested. Not started."""
    if kind == "sqlite":
        return InProcess(f"sqlite:///{directory / 'board.db'}", **settings)
    return Server(request.getfixturevalue("postgres").new_database(), directory, *options)


SERVED = [pytest.param("sqlite"), pytest.param("postgresql", marks=pytest.mark.slow)]
"""The databases a module's service runs on: SQLite in process (the quick tier), and
PostgreSQL behind a real server (slow: a PostgreSQL server starts first)."""


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[Any]:
    """start_service(url, *options, **settings) -> a running service: on a SQLite file,
    the application in this process (InProcess, with `settings`: jobs, max_upload,
    timeout, instance_memory); on PostgreSQL, `evalproto serve` (a Server, with
    `options`). All stopped at the end."""
    started: List[Any] = []

    def start(url: str, *options: str, **settings: Any) -> Any:
        service = (InProcess(url, **settings) if url.startswith("sqlite")
                   else Server(url, tmp_path, *options))
        started.append(service.start())
        return service

    yield start
    for service in started:
        assert service.stop() == 0, service.text()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Any]:
    """start_server(url, *options) -> a running Server; all stopped at the end."""
    started: List[Server] = []

    def start(url: str, *options: str, env: Optional[Dict[str, str]] = None) -> Server:
        server = Server(url, tmp_path, *options, env=env).start()
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process is not None and server.process.poll() is None:
            assert server.stop() == 0, server.text()


# -- data ---------------------------------------------------------------------------------------

def lines(name: str) -> List[str]:
    with open(DATA / name, encoding="utf-8", newline="\n") as stream:
        return [line.rstrip("\n") for line in stream]


def jsonl(path: Path, rows: Sequence[Dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                    encoding="utf-8")
    return path


def tags_of(number: int, text: str) -> List[str]:
    """Tags with some variety: by length, a second one on some, none on others."""
    tags = ["long"] if len(text.split()) > 20 else ["short"]
    if number % 4 == 0:
        tags.append("every-fourth")
    return [] if number % 7 == 3 else tags


def dataset_rows(pair: str = "de-en", references: Sequence[str] = ("A",)) -> List[Dict[str, Any]]:
    """A Dynabench dataset of a WMT22 excerpt: ids "s1", "s2", ..., answers, tags."""
    streams = [lines(f"{pair}.ref.{name}.{pair[-2:]}") for name in references]
    return [{"uid": f"s{number}", "answer": texts[0] if len(texts) == 1 else list(texts),
             "tags": tags_of(number, texts[0])}
            for number, texts in enumerate(zip(*streams), 1)]


def prediction_rows(hyps: Sequence[str]) -> List[Dict[str, Any]]:
    """Predictions for dataset_rows, in a shuffled order (joined on id, not position)."""
    rows = [{"id": f"s{number}", "pred": hyp} for number, hyp in enumerate(hyps, 1)]
    return rows[1::2] + rows[0::2]


def systems(pair: str = "de-en") -> Dict[str, List[str]]:
    """Real systems of an excerpt, and one made to be hard to tell from the first."""
    if pair == "de-en":
        first, second = lines("de-en.hyp.LT22.en"), lines("de-en.hyp.Lan-Bridge.en")
        found = {"lt22": first, "lan-bridge": second, "human-b": lines("de-en.ref.B.en")}
    else:
        first, second = lines("en-de.hyp.Online-A.de"), lines("en-de.hyp.JDExploreAcademy.de")
        found = {"online-a": first, "jdexplore": second}
    found["mixed"] = [b if i % 10 == 0 else a for i, (a, b) in enumerate(zip(first, second))]
    return found
