"""Pages, and the leaderboards and exports they are made of, kept with the version of
their task they were made at (Boards.version)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

KEPT_PAGES = 256
BUSY = 4
GRACE = 1.0
"""Under load (more than BUSY requests being answered at once), a reader that may take
an earlier page takes one made less than GRACE seconds ago, whatever changed since: a
task's version changes with every job's start and end, and remaking its pages (fifty
models' each) at every change would spend the server on remaking what is read. A page
is then at most a second behind (a task's page catches up by its script); one reader
at a time is always answered from the database's present."""
RECENT = 0.1
"""Under load, how long a task's version is taken as read (see Kept.recent)."""


class _Read:
    """A read under way in Kept.recent: its end, and its value if it read one."""

    def __init__(self) -> None:
        """A read begun."""
        self.done = threading.Event()
        self.read = False
        self.value: Any = None


class Kept:
    """Pages, and the leaderboards and exports they are made of, each kept with the
    version of its task it was made at (Boards.version): while the version holds, it is
    the same, and a read costs the version's few queries instead of its making (under
    load, readers of 50 model pages share one leaderboard). One reader makes what a new
    version needs; the others wait for it, or, where `earlier` allows, take the one
    made at the version before meanwhile (a page a moment old, which its script
    updates), so that a change does not stall every reader at once."""

    def __init__(self) -> None:
        """An empty cache."""
        self._lock = threading.Lock()
        self._kept: OrderedDict[Tuple[Any, ...], Tuple[Tuple[Any, ...], Any, float]] = (
            OrderedDict())
        self._making: Dict[Tuple[Any, ...], threading.Event] = {}
        self._serving = 0  # requests being answered
        self._recent: Dict[Tuple[Any, ...], Tuple[Any, float]] = {}
        self._reading: Dict[Tuple[Any, ...], _Read] = {}  # recent's reads under way

    def recent(self, key: Tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """`make()`, or under load what it gave less than RECENT seconds ago (a task's
        version, read at every request: under load, once per RECENT); under load a
        request that comes while another reads it waits for that read and takes its
        value (or reads itself, if that read failed)."""
        mine: Optional[_Read] = None
        with self._lock:
            busy = self._serving > BUSY
            found = self._recent.get(key)
            if busy and found is not None and time.monotonic() - found[1] < RECENT:
                return found[0]
            joined = self._reading.get(key) if busy else None
            if key not in self._reading:
                mine = self._reading[key] = _Read()
        if joined is not None:
            joined.done.wait()
            if joined.read:
                return joined.value
        started = time.monotonic()
        try:
            value = make()
            with self._lock:
                stored = self._recent.get(key)
                if stored is None or stored[1] <= started:  # not over a later read's
                    self._recent[key] = (value, started)
            if mine is not None:
                mine.value, mine.read = value, True
            return value
        finally:
            if mine is not None:
                with self._lock:
                    del self._reading[key]
                mine.done.set()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Count a request while it is answered (see GRACE)."""
        with self._lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1

    def get(self, key: Tuple[Any, ...], version: Tuple[Any, ...], make: Callable[[], Any],
            earlier: bool = False) -> Any:
        """What `make()` gives for `key` at `version`, made once (see the class)."""
        while True:
            with self._lock:
                found = self._kept.get(key)
                if found is not None and found[0] == version:
                    self._kept.move_to_end(key)
                    return found[1]
                if (earlier and found is not None and self._serving > BUSY
                        and time.monotonic() - found[2] < GRACE):
                    return found[1]  # under load, a page a moment old (see GRACE)
                making = self._making.get(key)
                if making is None:
                    making = self._making[key] = threading.Event()
                    break
                if earlier and found is not None:
                    return found[1]
            making.wait()  # then it is this version's, or this reader makes it
        try:
            value = make()
            with self._lock:
                self._kept[key] = (version, value, time.monotonic())
                while len(self._kept) > KEPT_PAGES:
                    self._kept.popitem(last=False)
            return value
        finally:
            with self._lock:
                self._making.pop(key, None)
            making.set()
