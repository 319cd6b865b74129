"""The exceptions a user can see. The CLI turns each into one message and exit status 1."""


class EvalprotoError(Exception):
    """Base of every error that is reported to the user as a message, not a traceback."""


class InputError(EvalprotoError):
    """An input file that cannot be read as what it was given for."""


class EvaluatorError(EvalprotoError):
    """An evaluator that failed: an ERROR reply, a bad reply, death, or no reply in time."""


class SetupError(EvalprotoError):
    """An evaluator that cannot be built as specified, e.g. a missing optional extra."""
