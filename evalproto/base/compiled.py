"""The compiled kernels (sources in native/), and the switch back to the pure-Python
reference code that tests compare them against: EVALPROTO_PURE_PYTHON=1. Both give the
same numbers, bit for bit; a missing build is an error that says how to make it, never
a quiet switch to the slow path."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from evalproto.base.errors import EvaluatorError, SetupError

PURE_PYTHON_VARIABLE = "EVALPROTO_PURE_PYTHON"


class NativeMissingError(EvaluatorError, SetupError):
    """The compiled kernels are not built. An EvaluatorError as well, so that
    `stats_many` reports it at once instead of first recomputing every item in Python
    to find one that fails."""


def pure_python() -> bool:
    """Whether EVALPROTO_PURE_PYTHON=1 asks for the pure-Python reference code."""
    return os.environ.get(PURE_PYTHON_VARIABLE) == "1"


def compiled(module: str) -> ModuleType:
    """A compiled module (e.g. "evalproto.stats._resample"), or a NativeMissingError
    saying how to build it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise NativeMissingError(
            f"evalproto's compiled kernels are missing ({exc}). Build them by reinstalling "
            "with a C++ compiler present (on Debian: apt-get install g++ python3-dev), "
            "e.g. pip install -e . in the source tree; or set EVALPROTO_PURE_PYTHON=1 to "
            "use the slower pure-Python code.") from None


def one_kernel_thread() -> None:
    """Run each call of the BLEU, chrF and TER kernels on one thread (by default a large
    batch is split over every usable CPU): in a -j copy, where N copies are already N
    processes. Nothing to do without the kernels, or with EVALPROTO_PURE_PYTHON=1."""
    try:
        native = importlib.import_module("evalproto.evaluators._native")
    except ImportError:
        return
    native.set_threads(1)
