"""The compiled kernels (evalproto.evaluators._native, sources in native/) behind BLEU's, chrF's
and TER's `stats_batch`; with EVALPROTO_PURE_PYTHON=1 (evalproto.base.compiled) they use
the pure-Python reference code instead. Both give the same rows, bit for bit
(tests/test_native.py).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from evalproto.base.compiled import compiled, kernel_threads


def kernels() -> ModuleType:
    """The compiled module, its calls set to take this process's share of the CPUs
    (kernel_threads), or a NativeMissingError saying how to build it."""
    module = compiled("evalproto.evaluators._native")
    module.set_threads(min(kernel_threads(), module.MAX_THREADS))
    return module


def as_rows(buffer: bytearray, width: int) -> np.ndarray:
    """A kernel's float64 rows of `width` numbers, as an array over the same memory."""
    return np.frombuffer(buffer, dtype=np.float64).reshape(-1, width)
