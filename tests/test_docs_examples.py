"""Every example of the README and of the docs/ pages is true: Python sessions run as
doctests, Python programs run, and every command shown with `$ ` prints what the page
shows, byte for byte.

A page's commands run in order, by bash, in a directory of the page's own that holds a
copy of the test files the examples read (tests/data, tests/lm_fixture), so an example
that writes a file writes it there, never into the repository. In a ```text block, a
line that starts with `$ ` is a command (a line ending in a backslash goes on on the
next line), the lines that start with `> ` after it are its standard input (a tuner's
requests to an evaluator), and the other lines are what it prints on standard output.
Blocks of other languages (sh, ini, toml) show commands and files for the reader to
use elsewhere and are not run, except that docs/sdk.md's plugin package is built from
its blocks and installed, and that page's commands run with it installed.

docs/service.md, docs/dynaboard.md and docs/lm-zoo.md are run by their own tests
(tests/service/test_service_docs.py, which starts a server first, and
tests/test_lmzoo.py), and so are the README's blocks that use a server (`evalproto
board`): by tests/service/test_service_docs.py.
"""

from __future__ import annotations

import doctest
import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List

import numpy as np
import pytest
from conftest import venv_with_package
from docpages import ROOT, Command, commands, fenced

import evalproto

OWN_TESTS = {"docs/service.md": "tests/service/test_service_docs.py",
             "docs/dynaboard.md": "tests/service/test_service_docs.py",
             "docs/lm-zoo.md": "tests/test_lmzoo.py"}
PAGES = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")
                              if f"docs/{path.name}" not in OWN_TESTS)]
COPIED = ("tests/data", "tests/lm_fixture")
"""What the examples read, copied into each page's directory."""
PLUGIN_PAGE = "docs/sdk.md"
"""The page whose commands run with its plugin package installed."""


COMMANDS = [command for page in PAGES for command in commands(page)]
SESSIONS = [(page, line, text) for page in PAGES for line, text in fenced(page, "python")
            if ">>>" in text]
PROGRAMS = [(page, line, text) for page in PAGES for line, text in fenced(page, "python")
            if ">>>" not in text]


def test_the_pages_have_examples_of_each_kind():
    assert len(SESSIONS) >= 2 and len(PROGRAMS) >= 2 and len(COMMANDS) >= 20
    for page in ("README.md", "docs/protocol.md", "docs/command-line.md", "docs/python.md",
                 "docs/sdk.md", "docs/statistics.md", "docs/errors.md"):
        assert any(command.page == page for command in COMMANDS) or any(
            session[0] == page for session in SESSIONS), page


def named_files(page: str) -> Dict[str, str]:
    """{name: text} of the page's blocks that name their file in their first line
    (`# length_ratio.py`, `# setup.cfg`): files for the reader to make."""
    found = {}
    for language in ("python", "ini", "toml"):
        for _, text in fenced(page, language):
            named = re.match(r"# ([\w.-]+\.(?:py|cfg|toml))\b", text)
            if named:
                found[named.group(1)] = text
    return found


class PageDirectory:
    """A page's directory: a copy of the files its examples read and the files the page
    names, where its commands have run in order up to `done`."""

    def __init__(self, path: Path, page: str) -> None:
        self.path = path
        for name in COPIED:
            shutil.copytree(ROOT / name, path / name)
        for name, text in named_files(page).items():
            (path / name).write_text(text, encoding="utf-8")
        self.done = 0
        self.printed: Dict[int, subprocess.CompletedProcess] = {}
        self.names: Dict[str, object] = {}  # the namespace of the page's Python sessions
        self.sessions_done = 0
        self.failed: Dict[int, int] = {}


def repository_files() -> Dict[str, float]:
    """{path: modification time} of every file of the repository that git tracks, or
    that it would add (untracked and not ignored); {} outside a git checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        return {}
    found = {}
    for name in listed.stdout.decode("utf-8", "replace").split("\0"):
        if name and (ROOT / name).exists():
            found[name] = (ROOT / name).stat().st_mtime
    return found


@pytest.fixture(scope="session")
def page_directories(tmp_path_factory) -> Iterator[Dict[str, PageDirectory]]:
    """Each page's directory, made when first needed; at the end, the repository must
    hold no file the examples made or changed."""

    class Directories(dict):
        def __missing__(self, page: str) -> PageDirectory:
            self[page] = PageDirectory(tmp_path_factory.mktemp(page.replace("/", "-")), page)
            return self[page]

    before = repository_files()
    yield Directories()
    after = repository_files()
    written = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    assert not written, f"examples wrote into the repository: {written}"


def environment(extra_bin: List[str]) -> Dict[str, str]:
    """This environment, with the console scripts beside this interpreter first on PATH."""
    path = [*extra_bin, str(Path(sys.executable).parent), os.environ["PATH"]]
    return {**os.environ, "PATH": os.pathsep.join(path)}


def run(command: Command, directory: Path, extra_bin: List[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command.command], cwd=directory, input=command.stdin,
                          capture_output=True, text=True, encoding="utf-8",
                          env=environment(extra_bin), timeout=300)


@pytest.fixture(scope="session")
def plugin_bin(tmp_path_factory) -> str:
    """The bin directory of a virtual environment where the plugin package that
    docs/sdk.md describes is installed, built from the page's own blocks (each names
    its file in its first line: `# word_recall.py`), with an `evalproto` command."""
    root = tmp_path_factory.mktemp("plugin-venv")
    package = tmp_path_factory.mktemp("word-recall")
    files = named_files(PLUGIN_PAGE)
    assert set(files) == {"word_recall.py", "setup.cfg", "pyproject.toml"}
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    bin_folder = venv_with_package(root, package)
    launcher = bin_folder / "evalproto"
    python = bin_folder / "python"
    launcher.write_text(f"#!{python}\nfrom evalproto.cli.launch import main\nmain()\n")
    launcher.chmod(0o755)
    return str(bin_folder)


def run_commands(directory: PageDirectory, page: str, before: int, extra_bin: List[str]) -> None:
    """Run the page's commands above line `before` that have not run yet, in order."""
    own = [command for command in COMMANDS if command.page == page]
    while directory.done < len(own) and own[directory.done].line < before:
        directory.printed[own[directory.done].line] = run(own[directory.done], directory.path,
                                                          extra_bin)
        directory.done += 1


def extra_bin_of(page: str, request) -> List[str]:
    return [request.getfixturevalue("plugin_bin")] if page == PLUGIN_PAGE else []


@pytest.mark.parametrize("command", [
    pytest.param(command, id=f"{command.page}, line {command.line}",
                 marks=[pytest.mark.install] if command.page == PLUGIN_PAGE else [])
    for command in COMMANDS])
def test_commands_print_what_the_page_shows(command, page_directories, request):
    directory = page_directories[command.page]
    run_commands(directory, command.page, command.line + 1, extra_bin_of(command.page, request))
    completed = directory.printed[command.line]
    assert completed.stdout == command.shown, completed.stderr


@pytest.mark.parametrize("page, line, text", SESSIONS,
                         ids=[f"{page}, line {line}" for page, line, _ in SESSIONS])
def test_python_sessions(page, line, text, page_directories, monkeypatch, request):
    """A page's sessions are one session: each goes on in the names of those before it
    (which run first, in order), in the page's directory, after the commands above it."""
    directory = page_directories[page]
    own = [(entry_line, entry) for entry_page, entry_line, entry in SESSIONS if entry_page == page]
    run_commands(directory, page, line, extra_bin_of(page, request))  # the files they make
    monkeypatch.chdir(directory.path)
    monkeypatch.syspath_prepend(str(directory.path))  # as Python started there has it
    monkeypatch.setenv("PATH", environment([])["PATH"])
    while directory.sessions_done <= own.index((line, text)):
        at, session = own[directory.sessions_done]
        test = doctest.DocTestParser().get_doctest(session, directory.names, page, page, at)
        runner = doctest.DocTestRunner()
        runner.run(test, out=sys.stdout.write, clear_globs=False)
        directory.names.update(test.globs)  # the test ran in a copy
        directory.failed[at] = runner.summarize(verbose=False).failed
        directory.sessions_done += 1
    assert directory.failed[line] == 0


@pytest.mark.parametrize("page, line, text", PROGRAMS,
                         ids=[f"{page}, line {line}" for page, line, _ in PROGRAMS])
def test_python_programs_define_working_evaluators(page, line, text):
    """Each program that uses evalproto runs (as an import, not as __main__), and every
    evaluator it defines gives a finite score to a real segment. A program that does
    not is a file for the page's commands, which run it."""
    code = compile(text, f"{page}, line {line}", "exec")
    if "evalproto" not in text:
        assert any(name in command.command for name in named_files(page)
                   for command in COMMANDS if command.page == page)
        return
    namespace = {"__name__": "docs_example"}
    exec(code, namespace)
    defined = [value for value in namespace.values() if isinstance(value, type)
               and issubclass(value, evalproto.Evaluator)
               and value not in (evalproto.Evaluator, evalproto.CountsEvaluator)]
    assert defined
    for evaluator in defined:
        rows = evaluator().stats_many([(["The cat sat on the mat."], "the cat sat")])
        assert np.isfinite(evaluator().score(rows.sum(axis=0)))


@pytest.mark.lmc
def test_the_committed_lm_logs_are_what_lmc_writes(tmp_path, monkeypatch):
    """tests/lm_fixture/logs (docs/lm.md's examples) are regenerated, not edited."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "lm_fixture"))
    import lmc_logs

    if not lmc_logs.LMC.exists():
        pytest.fail("LM Challenge is not installed for the tests: run bash tests/install-lmc")
    lmc_logs.write_logs(tmp_path)
    committed = sorted(path.name for path in lmc_logs.LOGS.iterdir())
    assert committed == sorted(path.name for path in tmp_path.iterdir())
    for name in committed:
        assert read_log(tmp_path / name) == read_log(lmc_logs.LOGS / name), name


def read_log(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


if __name__ == "__main__":  # print what a page's commands print, to write it into the page
    import tempfile

    for page in sys.argv[1:]:
        directory = Path(tempfile.mkdtemp())
        PageDirectory(directory, page)
        for command in commands(page):
            done = run(command, directory, [])
            print(f"--- {page}, line {command.line}: $ {command.command}\n{done.stdout}", end="")
            if done.returncode:
                print(f"--- (exit status {done.returncode}; stderr: {done.stderr})")
