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
import gc
import os
import shlex
import signal
import sys
import time
import warnings
from types import CodeType, FrameType
from typing import Any, Optional, Sequence

from evalproto.cli import pipes
from evalproto.cli.words import METRIC_FLAGS, option_values

BLAS_SPIN_CYCLES = ("OPENBLAS_THREAD_TIMEOUT", "20")
"""OpenBLAS's idle threads wait for work spinning, by default for 2**28 cycles (about a
tenth of a second of a CPU, from numpy's import on, where no product is ever asked
for): longer than a whole corpus-score, on a CPU its kernels and its -e evaluators
want. The command sets 2**20 cycles (a fraction of a millisecond), for the processes
it starts too, unless the environment says otherwise; BLAS keeps its threads, and
every product its numbers."""

YOUNG_OBJECTS_PER_COLLECTION = 10_000
"""Python collects its youngest objects every 700 allocations by default. The command's
start-up makes a few hundred thousand objects that live as long as it does (numpy's,
click's, its own modules): collected every 700, they are walked again and again to
find nothing, 5% of a whole corpus-score. Every 10,000 keeps a little more garbage a
little longer."""

_JOBS_FLAGS = ("-j", "--jobs")
# The commands that run -e evaluators here; elsewhere (with --scheduler, or only
# printing help) the head start would be wasted.
_COMMANDS = ("corpus-score", "stats", "report")
_NOT_LOCAL = ("--scheduler", "-h", "--help")

def head_start(args: Sequence[str]) -> None:
    """Start the -e evaluators of a local corpus-score or stats run, as many copies of
    each as -j asks for. A command that cannot start is left for the run to report."""
    words = [word.partition("=")[0] for word in args]
    if not args or args[0] not in _COMMANDS or any(word in _NOT_LOCAL for word in words):
        return
    from evalproto.base import processes

    jobs = [value for _, value in option_values(args, dict.fromkeys(_JOBS_FLAGS, "jobs"))]
    # ASCII digits, few enough for int() (numerals.is_whole_number, whose imports the head
    # start spares); a count too long to read is refused by the run
    given = jobs[-1] if jobs else "1"
    copies = int(given) if given.isascii() and given.isdigit() and len(given) < 20 else 1
    if copies > processes.most_copies():  # the run refuses it
        return
    for kind, command in option_values(args, METRIC_FLAGS):
        try:
            argv = tuple(shlex.split(command)) if kind == "command" else ()
            for _ in range(copies if argv else 0):
                processes.start_ahead(argv, copy=copies > 1)  # as the pool starts them
        except (OSError, ValueError):
            continue


def main() -> None:
    """Run the `evalproto` command. Ctrl-C or SIGTERM at any moment, imports included,
    ends it with one "Aborted!" line and exit status 1: the first signal interrupts,
    and further ones are ignored while the run cleans up after itself."""
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, *gc.get_threshold()[1:])
    catch_signals()
    warnings.showwarning = _show_warning
    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 is shown escaped
        stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        from evalproto.base import processes

        atexit.register(processes.end_untaken)
        os.environ.setdefault(*BLAS_SPIN_CYCLES)  # before numpy loads here or in a head start
        head_start(sys.argv[1:])
        from evalproto.cli.main import main as cli_main

        try:
            cli_main(prog_name="evalproto")
        finally:
            pipes.flush_stdout()
            # The interpreter's last collections walk every object numpy, click and the
            # run made (a tenth of a corpus-score on 2,000 segments), to find nothing.
            gc.freeze()
    except (Interrupted, KeyboardInterrupt):
        if "evalproto.cli.progress" in sys.modules:  # erase the bars still drawn
            sys.modules["evalproto.cli.progress"].clear()
        sys.stderr.write("Aborted!\n")
        sys.stderr.flush()
        sys.exit(1)
    except Exception as exc:  # a bug: one line that says so, unless asked for the trace
        if os.environ.get("EVALPROTO_TRACEBACK"):
            raise
        sys.stderr.write(f"Error: internal error ({type(exc).__name__}: {exc}). This is a bug "
                         f"in evalproto: please report it with the command line (set "
                         f"EVALPROTO_TRACEBACK=1 to see where it happened).\n")
        sys.exit(1)


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM. Not a KeyboardInterrupt, which click would report with an
    extra blank line: it unwinds every `with` and `finally` (evaluators are killed,
    temporary files removed) up to `main`, which prints the one line."""


_interrupting = False  # an Interrupted is unwinding: later signals are ignored


def catch_signals() -> None:
    """Turn Ctrl-C and SIGTERM into `Interrupted`, never lost on the way (below)."""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    sys.unraisablehook = _raise_again_if_interrupted


def _interrupt(signum: int, frame: Optional[FrameType]) -> None:
    global _interrupting
    if _interrupting or _called_from(frame, _raise_again_if_interrupted.__code__):
        return  # in the hook, what is raised is lost for good: its thread signals again
    _interrupting = True
    raise Interrupted()


def _raise_again_if_interrupted(unraisable: Any) -> None:
    """Python runs a signal handler wherever the main thread is, and some places drop
    what it raises with an "Exception ignored" trace: a weak reference's callback (one
    runs in every import), a `__del__`. The run would go on as if no signal had come,
    deaf to any other. Dropped there, the interrupt is sent again from a thread until
    the handler raises it somewhere else (a real signal, so that it also ends a wait
    for an evaluator's reply)."""
    global _interrupting
    if not isinstance(unraisable.exc_value, Interrupted):
        sys.__unraisablehook__(unraisable)
        return
    import threading

    _interrupting = False
    threading.Thread(target=_signal_until_raised, args=(threading.main_thread().ident,),
                     daemon=True).start()


def _signal_until_raised(main_thread: int) -> None:
    while not _interrupting:
        signal.pthread_kill(main_thread, signal.SIGINT)
        time.sleep(0.05)


def _called_from(frame: Optional[FrameType], code: CodeType) -> bool:
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    return frame is not None


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int,
                  file: object = None, line: object = None) -> None:
    """Warnings as one line on stderr, like errors, worded for the command line; never
    a source line."""
    from evalproto.cli.options import for_the_command_line  # loaded by every command

    sys.stderr.write(f"Warning: {for_the_command_line(str(message))}\n")
