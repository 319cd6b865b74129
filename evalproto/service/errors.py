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
        """The refusal's message, as the answer and the log say it."""
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



def described(exc: BaseException) -> str:
    """An exception in words for a log line or a job's message, with no stored value in
    it. A database's own message may quote one (PostgreSQL's DETAIL: "Key
    (token_hash)=(...) already exists"; its "invalid input syntax" quotes the input),
    which SQLAlchemy's hide_parameters does not hide: a database error is said by its
    kind, its SQLSTATE and the schema's names it gives (table, column, constraint)."""
    original = getattr(exc, "orig", None)
    if original is None or not isinstance(original, Exception):
        return f"{type(exc).__name__}: {exc}"
    diagnosis = getattr(original, "diag", None)
    names = [f"{what} {getattr(diagnosis, f'{what}_name', None)}"
             for what in ("table", "column", "constraint")
             if getattr(diagnosis, f"{what}_name", None)]
    code = getattr(original, "sqlstate", None)
    details = [*([f"SQLSTATE {code}"] if code else []), *names]
    if not hasattr(original, "sqlstate"):  # SQLite: its messages name no stored value
        details = [str(original)]
    return f"{type(exc).__name__} ({type(original).__name__}: {'; '.join(details)})"


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
