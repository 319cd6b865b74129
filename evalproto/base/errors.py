"""The exceptions and warnings a user can see. The CLI turns each error into one message
and exit status 1, or 2 for a usage problem."""

from __future__ import annotations

import sys
import warnings
from typing import Any, Optional, TypeVar

Placed = TypeVar("Placed", bound="EvalprotoError")


class EvalprotoError(Exception):
    """Base of every error that is reported to the user as a message, not a traceback.

    A failure on one item carries `item`, its index among the items of the call that
    failed, so that a caller who knows where the items came from can say instead which
    segment of which file it was (`at`)."""

    def __init__(self, problem: str, item: Optional[int] = None,
                 where: Optional[str] = None) -> None:
        super().__init__(problem)
        self.problem, self.item, self.where = problem, item, where

    def __str__(self) -> str:
        if self.where is not None:
            return f"{self.where}: {self.problem}"
        if self.item is not None:
            return f"item {self.item + 1}: {self.problem}"
        return self.problem

    def __reduce__(self) -> Any:  # item and place survive pickling (-j workers, Dask)
        return type(self), (self.problem, self.item, self.where)

    def shifted(self: Placed, offset: int) -> Placed:
        """The same failure, for a call whose items began `offset` items earlier."""
        if self.item is None:
            return self
        return type(self)(self.problem, self.item + offset, self.where)

    def at(self: Placed, where: str) -> Placed:
        """The same failure, placed (e.g. "segment 12 of hyp.txt")."""
        return type(self)(self.problem, self.item, where)


class InputError(EvalprotoError):
    """An input file that cannot be read as what it was given for."""


class EvaluatorError(EvalprotoError):
    """An evaluator that failed: an ERROR reply, a bad reply, death, or no reply in time."""


class SetupError(EvalprotoError, ValueError):
    """An evaluator that cannot be built as specified (an unknown option value, a missing
    optional extra). It is a ValueError too, as a Python caller expects of a bad value."""


class UsageProblem(EvalprotoError, ValueError):
    """A call that asks for something impossible or unknown with these inputs: an unknown
    metric or option, options that contradict each other, a paired t-test of BLEU (the
    command line reports it as a usage error, exit status 2; for a Python caller, a
    ValueError)."""


class SpecError(SetupError, UsageProblem):
    """An evaluator spec that names an unknown evaluator, or an option it does not have
    or a bad value for one (`-m "bleu --tokenise intl"`): a usage error, and for a
    Python caller a bad value (ValueError) like any SetupError."""


class EvaluatorWarning(UserWarning):
    """Something a user should know about an evaluator that still gave numbers, e.g. one
    that did not describe itself."""


class InputWarning(UserWarning):
    """Input that is read as asked but looks like it was meant otherwise: hypotheses that
    look tokenized (sacrebleu's BLEU warning), a JSON Lines file read as plain text."""


def warn(warning: Warning) -> None:
    """Issue `warning` at the caller's line: the first frame outside evalproto, however
    deep inside it the warning was found, so that Python shows the user's own code."""
    level, frame = 2, sys._getframe(1)  # 1 is this function, 2 its caller
    while frame.f_globals.get("__name__", "").startswith("evalproto") and frame.f_back:
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level)
