"""Progress bars on stderr for the command line: one per phase (scoring a metric,
resampling, a paired test), with rate and time left, drawn by tqdm.

Only on a terminal: in pipes, files and CI logs nothing is written. A phase that ends
within DELAY_SECONDS draws nothing either, so short runs stay clean. Bars are erased
when their phase ends; on Ctrl-C, `clear` erases those still drawn before "Aborted!".
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional, TextIO

from tqdm import tqdm

DELAY_SECONDS = 1.0
REFRESH_SECONDS = 0.2
_open: List[Any] = []


class _Bar:
    """One phase's bar."""

    def __init__(self, label: str, total: int, stream: TextIO) -> None:
        self._bar = tqdm(total=total, desc=label, file=stream, delay=DELAY_SECONDS,
                         leave=False, dynamic_ncols=True, mininterval=REFRESH_SECONDS,
                         smoothing=0.1)
        _open.append(self)

    def advance(self, count: int = 1) -> None:
        self._bar.update(count)

    def close(self) -> None:
        if self in _open:
            _open.remove(self)
            self._bar.close()


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

    def start(self, label: str, total: int) -> Any:
        if not self.enabled or total <= 0:
            return _NoBar()
        return _Bar(label, total, self.stream)


def clear() -> None:
    """Erase every bar still drawn (on Ctrl-C, before "Aborted!")."""
    for bar in list(_open):
        bar.close()
