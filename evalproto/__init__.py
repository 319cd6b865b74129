"""evalproto: metric evaluators with additive statistics, in process or over a pipe.

Every name is imported on first use: Evaluator and EvaluatorProcess bring numpy, and the
`evalproto` command (evalproto.cli.launch) must set its signal handlers and start its
evaluators before anything slow.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {"Evaluator": "evalproto.metrics.evaluator", "EvaluatorProcess": "evalproto.sources.process",
         **dict.fromkeys(["EvalprotoError", "EvaluatorError", "InputError", "SetupError"],
                         "evalproto.base.errors")}

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
