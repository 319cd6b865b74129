"""Pausing Python's cyclic garbage collector around work that builds many objects."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused_gc() -> Iterator[None]:
    """Suspend the cyclic garbage collector while building millions of small acyclic
    objects (parsed JSON, stats rows, edit-search rows): its passes over them otherwise
    take much of the time, and find nothing. Reference counting still frees everything."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
