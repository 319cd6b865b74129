"""The `evalproto` command's entry point, which starts its external evaluators first.

An `-e` evaluator is a second process with its own start-up: for bleu-evaluator, a
Python interpreter and numpy, about 0.2 s. Started where it is needed, it began only
after the client had imported numpy, click and its commands and had read the corpus,
and the client then sat idle until it answered. Started here, before those imports,
the two start-ups overlap.

A process started here is only a head start. `EvaluatorProcess` takes one when it
starts the very same command line; any left untaken (the run failed, or did not need
it) is killed at exit. This module and the package's `__init__` import only the
standard library, so that the head start comes before anything slow.
"""

from __future__ import annotations

import atexit
import os
import shlex
import signal
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

METRIC_FLAGS = {"-m": "metric", "--metric": "metric", "-e": "evaluator", "--evaluator": "evaluator"}
_JOBS_FLAGS = ("-j", "--jobs")
# The commands that run -e evaluators here; elsewhere (with --scheduler, or only
# printing help) the head start would be wasted.
_COMMANDS = ("corpus-score", "stats")
_NOT_LOCAL = ("--scheduler", "-h", "--help")

_started: Dict[Tuple[str, ...], List[subprocess.Popen]] = {}


def spawn(argv: Sequence[str]) -> subprocess.Popen:
    """Start an evaluator with its three pipes, in its own process group so that a shell
    wrapper's children go with it."""
    return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def take(argv: Sequence[str]) -> Optional[subprocess.Popen]:
    """A process started ahead for exactly this command line, if one is waiting."""
    waiting = _started.get(tuple(argv))
    return waiting.pop() if waiting else None


def option_values(args: Sequence[str], flags: Dict[str, str]) -> List[Tuple[str, str]]:
    """(flags[flag], value) for each use of one of `flags`, in command-line order, in any
    of the forms `-x V`, `-xV`, `--long V` and `--long=V`, up to a `--`."""
    found = []
    words = iter(args)
    for word in words:
        if word == "--":
            break
        name, equals, value = word.partition("=")
        if name.startswith("--") and name in flags:
            found.append((flags[name], value if equals else next(words, "")))
        elif not word.startswith("--") and word[:2] in flags:
            found.append((flags[word[:2]], word[2:] or next(words, "")))
    return found


def head_start(args: Sequence[str]) -> None:
    """Start the -e evaluators of a local corpus-score or stats run, as many copies of
    each as -j asks for. A command that cannot start is left for the run to report."""
    words = [word.partition("=")[0] for word in args]
    if not args or args[0] not in _COMMANDS or any(word in _NOT_LOCAL for word in words):
        return
    jobs = [value for _, value in option_values(args, dict.fromkeys(_JOBS_FLAGS, "jobs"))]
    copies = int(jobs[-1]) if jobs and jobs[-1].isdigit() else 1
    for kind, command in option_values(args, METRIC_FLAGS):
        try:
            argv = tuple(shlex.split(command)) if kind == "evaluator" else ()
            for _ in range(copies if argv else 0):
                process = spawn(argv)
                _started.setdefault(argv, []).append(process)
        except (OSError, ValueError):
            continue


def kill_group(process: subprocess.Popen) -> None:
    """Kill an evaluator and anything it started."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _kill_untaken() -> None:
    for processes in _started.values():
        for process in processes:
            kill_group(process)
            process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                pipe.close()
    _started.clear()


def main() -> None:
    """Run the `evalproto` command."""
    atexit.register(_kill_untaken)
    head_start(sys.argv[1:])
    from evalproto.cli import main as cli_main

    cli_main(prog_name="evalproto")
