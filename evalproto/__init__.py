"""evalproto: metric evaluators with additive statistics, in process or over a pipe."""

__version__ = "0.1.0"

from evalproto.errors import EvalprotoError, EvaluatorError, InputError, SetupError  # noqa: E402
from evalproto.evaluator import Evaluator  # noqa: E402
from evalproto.client import EvaluatorProcess  # noqa: E402

__all__ = [
    "Evaluator",
    "EvaluatorProcess",
    "EvalprotoError",
    "EvaluatorError",
    "InputError",
    "SetupError",
    "__version__",
]
