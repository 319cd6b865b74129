"""evalproto: metric evaluators with additive statistics, in process or over a pipe.

Evaluator and EvaluatorProcess are imported on first use: both bring numpy, and the
`evalproto` command (evalproto.launch) must start its evaluators before anything slow.
"""

from __future__ import annotations

import importlib
from typing import Any

from evalproto.errors import EvalprotoError, EvaluatorError, InputError, SetupError

__version__ = "0.1.0"

_LAZY = {"Evaluator": "evalproto.evaluator", "EvaluatorProcess": "evalproto.client"}

__all__ = [
    "Evaluator",
    "EvaluatorProcess",
    "EvalprotoError",
    "EvaluatorError",
    "InputError",
    "SetupError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'evalproto' has no attribute {name!r}")
