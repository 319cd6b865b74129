"""The compiled kernels (evalproto.evaluators._native, sources in native/) behind BLEU's, chrF's
and TER's `stats_batch`, and the switch back to the pure-Python reference code:
EVALPROTO_PURE_PYTHON=1. Both give the same rows, bit for bit (tests/test_native.py).
"""

from __future__ import annotations

import os
from types import ModuleType

import numpy as np

from evalproto.base.errors import EvaluatorError, SetupError

PURE_PYTHON_VARIABLE = "EVALPROTO_PURE_PYTHON"


class NativeMissingError(EvaluatorError, SetupError):
    """The compiled kernels are not built. An EvaluatorError as well, so that
    `stats_many` reports it at once instead of first recomputing every item in Python
    to find one that fails."""


def pure_python() -> bool:
    """Whether EVALPROTO_PURE_PYTHON=1 asks for the pure-Python reference code."""
    return os.environ.get(PURE_PYTHON_VARIABLE) == "1"


def kernels() -> ModuleType:
    """The compiled module, or a NativeMissingError saying how to build it."""
    try:
        from evalproto.evaluators import _native
    except ImportError as exc:
        raise NativeMissingError(
            f"evalproto's compiled kernels are missing ({exc}). Build them by reinstalling "
            "with a C++ compiler present (on Debian: apt-get install g++ python3-dev), "
            "e.g. pip install -e . in the source tree; or set EVALPROTO_PURE_PYTHON=1 to "
            "use the slower pure-Python code.") from None
    return _native


def as_rows(buffer: bytearray, width: int) -> np.ndarray:
    """A kernel's float64 rows of `width` numbers, as an array over the same memory."""
    return np.frombuffer(buffer, dtype=np.float64).reshape(-1, width)
