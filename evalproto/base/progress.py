"""How long work tells the user how far it has come, without knowing who is watching.

Lower layers report progress through a `Progress` they are given: `start` a phase with
its total (of items, or of bytes with unit "B"), `advance` it, `close` it. The command
line passes one that draws bars on a terminal (evalproto.cli.progress); everyone else
gets `QUIET`, which does nothing.
"""

from __future__ import annotations

from typing import Protocol


class Phase(Protocol):
    def advance(self, count: int = 1) -> None: ...

    def close(self) -> None: ...


class Progress(Protocol):
    def start(self, label: str, total: int, unit: str = "") -> Phase: ...


class _Silent:
    def advance(self, count: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def start(self, label: str, total: int, unit: str = "") -> _Silent:
        return self


QUIET: Progress = _Silent()
"""A Progress that shows nothing."""
