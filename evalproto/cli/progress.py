"""A progress line on stderr for long runs, and nothing at all otherwise.

It appears only when stderr is a terminal and the run has lasted about 2 s, so logs,
pipes and short runs stay clean; it is erased when the work is done.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

DELAY_SECONDS = 2.0


class Progress:
    def __init__(self, total: int, label: str, stream: Optional[TextIO] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.label, self.done = total, label, 0
        self.stream = stream if stream is not None else sys.stderr
        self.clock, self.started = clock, clock()
        self.enabled = self.stream.isatty()
        self.width = 0

    def advance(self, count: int) -> None:
        self.done += count
        if not self.enabled or self.clock() - self.started < DELAY_SECONDS:
            return
        line = f"{self.label}: {self.done}/{self.total} ({100 * self.done // max(self.total, 1)}%)"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def finish(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
