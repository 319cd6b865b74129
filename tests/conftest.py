"""Shared paths and helpers for the test suite."""

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import site
import struct
import subprocess
import sys
import sysconfig
import termios
import textwrap
import time
import venv
from pathlib import Path
from typing import List, Optional, Tuple, Union

import pytest
from click.testing import CliRunner

from evalproto.cli.main import main

DATA = Path(__file__).parent / "data"

# -- the quick tier -----------------------------------------------------------------------

KINDS = ("browser", "dask", "install", "lmc")
"""Kinds of slow test (setup.cfg's markers); `pytest -m "not slow"` leaves them all out."""
SLOW_FILES = {
    "test_whitespace_rule.py": "slow",  # sacrebleu's command line against every path
    "test_fuzz.py": "slow",
    "test_cli_fuzz.py": "slow",
    "test_docs_examples.py": "slow",  # every command of every page
    "test_docs_site.py": "slow",  # mkdocs builds the site
    "test_distributed.py": "dask",
    "test_report_browser.py": "browser",
    "test_plugins.py": "install",
    "test_pages_browser.py": "browser",
    "test_dynaboard_browser.py": "browser",
}
"""Files whose every test is of a slow kind."""


SLOW_FIXTURES = {"lmc": "lmc", "start_server": "slow", "postgres": "slow"}
"""Fixtures that make a test of a slow kind: lmc runs LM Challenge; a test that starts
`evalproto serve` as a process, or a PostgreSQL server, takes seconds (the service's
other tests run its application in process, on SQLite, in the quick tier)."""


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """Mark the slow kinds: whole files (SLOW_FILES), tests by the fixtures they use
    (SLOW_FIXTURES); and every kind as slow too."""
    for item in items:
        path = Path(str(item.fspath))
        if path.name in SLOW_FILES:
            item.add_marker(SLOW_FILES[path.name])
        for fixture, kind in SLOW_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(kind)
        if any(item.get_closest_marker(kind) for kind in KINDS):
            item.add_marker("slow")
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


PYTHONS_SIGPIPE = signal.SIG_IGN
"""What Python does with SIGPIPE at start (a write to a closed pipe raises
BrokenPipeError), and so what every test runs with."""


@pytest.fixture(autouse=True)
def pythons_own_sigpipe():
    """Every test runs with Python's own SIGPIPE handling, and leaves it so. Both
    `evalproto sacrebleu` run in process and an import of `sacrebleu.sacrebleu` (at
    collection, by a test module) take the default, to end quietly in `| head`; with
    it, a test's write to a closed pipe, such as a process pool's to a worker the test
    killed, kills pytest (exit 141, no summary). Restoring what was there before a test
    would restore whatever collection left."""
    signal.signal(signal.SIGPIPE, PYTHONS_SIGPIPE)
    yield
    signal.signal(signal.SIGPIPE, PYTHONS_SIGPIPE)


def json_rows(output: str) -> List[dict]:
    return [json.loads(line) for line in output.splitlines()]


def serve(command: List[str], requests: Union[str, bytes],
          timeout: float = 60) -> subprocess.CompletedProcess:
    """Run an evaluator command on the given requests and collect everything."""
    data = requests.encode("utf-8") if isinstance(requests, str) else requests
    return subprocess.run(command, input=data, capture_output=True, timeout=timeout)


# A tiny evaluator whose SCORE reply is "1 <ref words> <hyp words>". FAULT is replaced
# by the misbehaviour under test and runs on the second SCORE; STARTUP runs first;
# UNKNOWN runs on any other command (INFO included).
FAKE_EVALUATOR = textwrap.dedent("""
    import os, subprocess, sys, time
    STARTUP
    scores = 0
    for line in sys.stdin:
        command, *fields = [f.strip() for f in line.split("|||")]
        if command == "SCORE":
            scores += 1
            if WHEN:
                FAULT
            reply = f"1 {len(fields[0].split())} {len(fields[-1].split())}"
        elif command == "EVAL":
            reply = str(sum(float(x) for x in fields[0].split()))
        else:
            UNKNOWN
        print(reply, flush=True)
""")


def fake(directory: Path, fault: str = "pass", startup: str = "",
         on_unknown: str = 'reply = "ERROR unknown command"', when: str = "scores == 2") -> str:
    """The command line of a fake evaluator written into `directory`; `fault` runs on the
    SCORE requests for which `when` holds (by default, the second)."""
    path = directory / "fake_evaluator.py"
    path.write_text(FAKE_EVALUATOR.replace("FAULT", fault).replace("STARTUP", startup)
                    .replace("UNKNOWN", on_unknown).replace("WHEN", when))
    return f"{sys.executable} {path}"


# An evaluator (on the SDK) whose every segment's row is [the threads its compiled
# kernels run on now, 1]: its score is the mean of those threads.
THREADS_EVALUATOR = textwrap.dedent("""
    from evalproto.evaluators.native import kernels
    from evalproto.metrics.evaluator import Evaluator

    class Threads(Evaluator):
        name = "threads"

        def __init__(self):
            self.stat_names = ("threads", "segments")

        def stats(self, refs, hyp):
            module = kernels()  # sets the limit of this process's share, and says it:
            return [module.set_threads(module.MAX_THREADS), 1]

        def score(self, vector):
            return vector[0] / vector[1]

    Threads.main()
""")


def threads_evaluator(directory: Path) -> str:
    """The command line of THREADS_EVALUATOR, written into `directory`."""
    path = directory / "threads_evaluator.py"
    path.write_text(THREADS_EVALUATOR)
    return f"{sys.executable} {path}"


def refusing(directory: Path) -> str:
    """An evaluator that answers ERROR to the hypothesis "BAD", and counts to others."""
    return fake(directory, 'print("ERROR cannot score BAD", flush=True); continue',
                when='fields[-1] == "BAD"')


def with_bad_line(directory: Path, number: int) -> str:
    """A copy of DE_EN_HYP whose line `number` is "BAD"."""
    lines = read_lines(DE_EN_HYP)
    lines[number - 1] = "BAD"
    path = directory / "with-bad-line.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def script(name: str) -> str:
    """An installed console script, found beside this interpreter (as pip installs it)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"console script {name} is not installed; run pip install -e ."
    return found


@pytest.fixture
def bleu_evaluator() -> List[str]:
    return [script("bleu-evaluator")]


def process_state(pid: int) -> str:
    """'gone', 'zombie' or 'running'."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
    return "zombie" if state in ("Z", "X") else "running"


def assert_ends(pid: int, seconds: float = 20.0) -> None:
    """Wait until the process has ended (gone, or a zombie whose parent has not reaped
    it yet): a killed process takes a moment to stop, longer on a busy machine."""
    deadline = time.monotonic() + seconds
    while process_state(pid) == "running":
        assert time.monotonic() < deadline, f"process {pid} is still running after {seconds} s"
        time.sleep(0.05)


def running_commands(fragment: str) -> List[int]:
    """The running processes whose command line holds `fragment` (zombies aside)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if fragment in (entry / "cmdline").read_text(errors="replace") and \
                    "zombie" not in (entry / "status").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_for_file(path: Path, seconds: float = 20.0) -> int:
    """The number a process wrote into `path`, once it has written it."""
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return int(path.read_text())


def venv_with_package(root: Path, package: Path) -> Path:
    """A virtual environment made in `root`, with `package` (a project's folder)
    installed in it; its bin folder. It reaches evalproto, its dependencies, pip and
    setuptools where they are installed now (addsitedir also runs their .pth files, as
    an editable install's), so nothing is downloaded."""
    venv.create(root, with_pip=False)
    python = root / "bin" / "python"
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True).stdout.strip()
    outer = [sysconfig.get_path("purelib"), *site.getsitepackages()]
    (Path(target) / "outer.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({path!r})" for path in dict.fromkeys(outer)))
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", str(package)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    return root / "bin"


EAGER_BARS = ("import evalproto.cli.progress as bars; bars.DELAY_SECONDS = 0; "
              "bars.REFRESH_SECONDS = 0; from evalproto.cli.launch import main; main()")
"""`python -c EAGER_BARS ARGS` runs `evalproto ARGS` with a bar for every phase, however
short, and every step of it drawn."""


class PseudoTerminal:
    """A command run on a pseudo-terminal of 30 rows and 200 columns (or `size`, None
    for one nobody sized, 0 x 0), as a person runs it: the terminal is its stdin and
    stderr, and its stdout unless `stdout` is given. What it writes is read as it comes,
    with deadlines, never fixed sleeps."""

    def __init__(self, command: List[str], stdout: Optional[int] = None,
                 cwd: Optional[str] = None, size: Optional[Tuple[int, int]] = (30, 200)
                 ) -> None:
        self.master, slave = pty.openpty()
        if size is not None:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
        self.process = subprocess.Popen(command, stdin=slave, stdout=stdout or slave,
                                        stderr=slave, cwd=cwd)
        os.close(slave)
        self.output = b""

    def _read(self, seconds: float) -> bool:
        """Read what has come within `seconds`; False once the terminal has closed."""
        ready, _, _ = select.select([self.master], [], [], seconds)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the terminal closed with the process
            return False
        self.output += chunk
        return bool(chunk)

    def wait_for(self, pattern: str, seconds: float = 60) -> "re.Match[str]":
        """The first match of `pattern` in the text written so far, waiting for it."""
        deadline = time.monotonic() + seconds
        while True:
            found = re.search(pattern, self.text)
            if found:
                return found
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{pattern!r} never appeared in {self.text[-2000:]!r}"
            if not self._read(min(remaining, 0.5)):
                found = re.search(pattern, self.text)
                assert found, f"{pattern!r} never appeared in {self.text[-2000:]!r}"
                return found

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, seconds: float = 60) -> int:
        """Read everything until the process ends; its exit status."""
        deadline = time.monotonic() + seconds
        while self._read(0.5):
            assert time.monotonic() < deadline, f"still running after {seconds} s"
        status = self.process.wait(timeout=max(1.0, deadline - time.monotonic()))
        os.close(self.master)
        return status

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace").replace("\r\n", "\n")

    def screen(self) -> List[str]:
        """The lines as a terminal would show them at the end: a carriage return goes
        back to the start of the line, and what follows overwrites what was there."""
        lines: List[str] = []
        for line in self.output.decode("utf-8", "replace").split("\n"):
            shown: List[str] = []
            column = 0
            for piece in re.split("(\r)", line):
                if piece == "\r":
                    column = 0
                    continue
                shown[column:column + len(piece)] = piece
                column += len(piece)
            lines.append("".join(shown).rstrip())
        return lines

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        try:
            os.close(self.master)
        except OSError:
            pass
