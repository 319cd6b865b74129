"""The compiled kernels (sources in native/), the switch back to the pure-Python
reference code that tests compare them against (EVALPROTO_PURE_PYTHON=1), and how many
threads a kernel may take. Both give the same numbers, bit for bit; a missing build is
an error that says how to make it, never a quiet switch to the slow path.

A kernel takes its process's share of the machine (`kernel_threads`): one thread in a
copy that runs beside others (-j copies, in process or as -e commands, and Dask
workers, whose own threads and fellow workers are the parallelism), and otherwise the
CPUs the process may use (evalproto.base.cpus: the affinity mask and a container's CPU
quota). A copy is told by EVALPROTO_KERNEL_THREADS=1 in its environment, which the
processes it starts inherit; a user may set it too, to cap every kernel."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from evalproto.base.cpus import usable_cpus
from evalproto.base.errors import EvaluatorError, SetupError

PURE_PYTHON_VARIABLE = "EVALPROTO_PURE_PYTHON"
THREADS_VARIABLE = "EVALPROTO_KERNEL_THREADS"
ONE_THREAD = {THREADS_VARIABLE: "1"}
"""The environment of an evaluator command started as one of several copies (-j)."""


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


def kernel_threads() -> int:
    """The threads a kernel call may run on: the CPUs this process may use, at most
    EVALPROTO_KERNEL_THREADS (1 in a copy that runs beside others, see one_kernel_thread)."""
    cpus = usable_cpus()
    asked = os.environ.get(THREADS_VARIABLE)
    if not asked:
        return cpus
    # here: the launcher's head start imports this module, and numerals' imports are slower
    from evalproto.base.numerals import is_whole_number

    if not is_whole_number(asked) or int(asked) < 1:
        raise SetupError(f"{THREADS_VARIABLE} must be a whole number >= 1 (the most threads "
                         f"a compiled kernel may run on), not {asked!r}")
    return min(int(asked), cpus)


def one_kernel_thread() -> None:
    """Run each kernel call of this process, and of the processes it starts, on one
    thread: in a -j copy or a Dask worker, where the copies (the workers' threads) are
    already as many as the CPUs."""
    os.environ[THREADS_VARIABLE] = "1"
