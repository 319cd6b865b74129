"""The refusals of the evaluation service, each with its HTTP status: a request that
cannot be served says why in one message (naming the line, the id or the name), and
nothing of it is stored."""

from __future__ import annotations

import logging

from evalproto.base.errors import EvalprotoError

log = logging.getLogger("evalproto.service")


class Refused(EvalprotoError):
    """A request the service does not carry out; `status` is the HTTP status."""

    status = 400

    @property
    def message(self) -> str:
        return str(self)


class Invalid(Refused):
    """Bad input: a name, a file, a spec, a value."""


class Unauthorized(Refused):
    """No token, or a token that is no one's."""

    status = 401


class Forbidden(Refused):
    """A valid token that may not do this."""

    status = 403


class NotFound(Refused):
    """An unknown task, dataset, model, team or submission."""

    status = 404


class Conflict(Refused):
    """Something of that name is there already."""

    status = 409



def log_refusal(request_id: str, method: str, path: str, status: int, message: str) -> None:
    """The one line an error leaves in the server's log, with the request's id. The
    path is the request's, decoded (%0A is a line break): its control characters are
    escaped, so that no request can write a line of its own into the log."""
    log.log(logging.ERROR if status >= 500 else logging.WARNING, "request %s: %s %s -> %d: %s",
            request_id, escaped(method), escaped(path), status,
            escaped(" ".join(message.split())))


def escaped(text: str) -> str:
    """`text` with control characters (and lone surrogates) written as escapes."""
    return "".join(character if character.isprintable() or character == " "
                   else character.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for character in text)
