"""Progress bars on stderr for the command line: one per phase (reading, scoring a
metric, resampling, a paired test, the report), with rate and time left, drawn by tqdm.

Only on a terminal: in pipes, files and CI logs nothing is written. A phase that ends
within DELAY_SECONDS draws nothing either, so short runs stay clean. Bars are erased
when their phase ends; on Ctrl-C, `clear` erases those still drawn before "Aborted!".
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional, TextIO

DELAY_SECONDS = 1.0
REFRESH_SECONDS = 0.2
UNSIZED_COLUMNS = 80
UNSIZED_ROWS = 24
"""What a pseudo-terminal nobody has sized (0 x 0) is drawn as: tqdm would read its
height as -1 rows and hide every bar."""
METER_COLUMNS = 50
"""Room kept beside a label for the bar, count, elapsed and left times and rate: a longer
label is cut at its start."""
MIN_LABEL = 12
_open: List[Any] = []


class _Bar:
    """One phase's bar."""

    def __init__(self, label: str, total: int, unit: str, stream: TextIO) -> None:
        from tqdm import tqdm  # imported here: it takes 50 ms, and only a terminal needs it
        in_bytes = unit == "B"
        columns = _columns(stream)  # 0 for a pseudo-terminal nobody has sized, where
        sized = columns > 0  # tqdm would draw nothing
        room = max(MIN_LABEL, (columns if sized else UNSIZED_COLUMNS) - METER_COLUMNS)
        if len(label) > room:  # the end of a long path says most; rate and time stay
            label = "…" + label[len(label) - room + 1:]
        self._stream = stream
        self._bar = tqdm(total=total, desc=label, file=stream, delay=DELAY_SECONDS,
                         leave=False, dynamic_ncols=sized,
                         ncols=None if sized else UNSIZED_COLUMNS,
                         nrows=None if sized else UNSIZED_ROWS, mininterval=REFRESH_SECONDS,
                         smoothing=0.1, unit=unit or "it", unit_scale=in_bytes,
                         unit_divisor=1024 if in_bytes else 1000)
        _open.append(self)

    def advance(self, count: int = 1) -> None:
        self._bar.update(count)

    def close(self) -> None:
        if self in _open:
            _open.remove(self)
            self._bar.close()

    def erase(self) -> None:
        """Blank the bar's whole line, then close the bar. tqdm's own clearing trusts its
        note of what it drew last, which a signal (Ctrl-C) may have cut short between
        the drawing and the note. Phases follow one another, so the bar is the one on
        the cursor's line."""
        self._stream.write("\r" + " " * (_columns(self._stream) or UNSIZED_COLUMNS) + "\r")
        self._stream.flush()
        self.close()


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class _NoBar:
    def advance(self, count: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class TerminalProgress:
    """A Progress (evalproto.base.progress) that draws bars when `stream` (stderr by
    default) is a terminal, and does nothing otherwise."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()

    def start(self, label: str, total: int, unit: str = "") -> Any:
        if not self.enabled or total <= 0:
            return _NoBar()
        return _Bar(label, total, unit, self.stream)


def clear() -> None:
    """Erase every bar still drawn (on Ctrl-C, before "Aborted!")."""
    for bar in list(_open):
        bar.erase()
