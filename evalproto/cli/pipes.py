"""A reader that stops early is no error: `evalproto list | head -1` exits 0.

When the program at the other end of standard output has gone, the rest of the output
is dropped, quietly, and the exit status is what it would have been. Only standard
output counts: a broken pipe to an evaluator is that evaluator's failure, and is
reported. Only the standard library is imported here, as in the launcher."""

from __future__ import annotations

import os
import select
import sys


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reading end has been closed."""
    try:
        poller = select.poll()
        poller.register(sys.__stdout__.fileno(), select.POLLOUT)  # type: ignore[union-attr]
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, or no real stdout
        return False


def drop_stdout() -> None:
    """Send what is still to be written to standard output nowhere, so that neither a
    later write nor the flush at exit fails again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
    os.close(devnull)


def flush_stdout() -> None:
    """Flush standard output at the end of a run; a reader that has gone is no error
    (Python would otherwise exit with status 120)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()
