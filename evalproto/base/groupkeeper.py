"""The keeper of a process's evaluator groups: a small process that ends them once the
process that started them has ended, however it ended (kill -9 included).

Run as a script (`python -I groupkeeper.py`, never imported by its parent: it needs
nothing but the standard library). Its standard input is a pipe whose only writer is
the process it keeps: a line `+PGID` when that process starts a process group, `-PGID`
when it has ended it itself. At the end of its input (the writer has exited, by any
means) it kills every group still listed, then exits. Signals meant for the server's
process group (Ctrl-C, SIGTERM) are ignored: its work comes at the end of its input.
"""

import os
import signal
import sys


def keep() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    groups: "set[int]" = set()
    for line in sys.stdin.buffer:
        sign, number = line[:1], line[1:].strip()
        if number.isdigit():
            (groups.add if sign == b"+" else groups.discard)(int(number))
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:  # gone already (or no longer ours)
            pass


if __name__ == "__main__":
    keep()
