"""Serving an evaluator over stdin/stdout: the loop behind every `*-evaluator` script.

One reply line per request, flushed at once. A request that cannot be served gets one
`ERROR` line (and the same message on stderr); then the server exits non-zero unless
it was started with --keep-going, because the tuners that speak this protocol do not
read replies carefully (see design.md).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, BinaryIO, TextIO

import click

from evalproto.errors import EvalprotoError
from evalproto.protocol import (
    EvalRequest,
    RequestError,
    ScoreRequest,
    format_error,
    format_number,
    format_numbers,
    parse_request,
)

if TYPE_CHECKING:
    from evalproto.evaluator import Evaluator


def answer(evaluator: Evaluator, line: bytes) -> str:
    """The reply line for one raw request line; raises RequestError for a bad request."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(
            f"request is not valid UTF-8: byte 0x{line[exc.start]:02x} at offset {exc.start}"
        ) from None
    request = parse_request(text)
    if isinstance(request, ScoreRequest):
        return format_numbers(evaluator.checked_stats(request.refs, request.hyp)) + "\n"
    if isinstance(request, EvalRequest):
        return format_number(evaluator.checked_score(request.vector)) + "\n"
    return json.dumps(evaluator.info(), ensure_ascii=False) + "\n"


def serve(evaluator: Evaluator, requests: BinaryIO, replies: BinaryIO, log: TextIO,
          keep_going: bool = False) -> int:
    """Answer requests until end of input; return the process exit status."""
    for number, line in enumerate(requests, 1):
        try:
            reply = answer(evaluator, line)
        except Exception as exc:  # an evaluator bug must not desynchronize the stream
            detail = str(exc) if isinstance(exc, (RequestError, ValueError)) else (
                f"{type(exc).__name__}: {exc}")
            reply = format_error(f"request {number}: {detail}")
            log.write(f"{evaluator.name}-evaluator: {reply}")
            log.flush()
            if not _send(replies, reply) or not keep_going:
                return 1
            continue
        if not _send(replies, reply):
            return 1
    return 0


def _send(replies: BinaryIO, reply: str) -> bool:
    """Write and flush one reply; False if the client has gone away."""
    try:
        replies.write(reply.encode("utf-8", "backslashreplace"))
        replies.flush()
    except BrokenPipeError:
        # Nobody is listening; stop Python from complaining again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), replies.fileno())
        return False
    return True


def console_command(evaluator_class: type[Evaluator]) -> click.Command:
    """The `NAME-evaluator` command: the evaluator's own options plus the server's."""

    def run(keep_going: bool, info: bool, **options: object) -> None:
        try:
            evaluator = evaluator_class(**options)
        except EvalprotoError as exc:
            raise click.ClickException(str(exc)) from None
        if info:
            click.echo(json.dumps(evaluator.info(), ensure_ascii=False))
            return
        status = serve(evaluator, sys.stdin.buffer, sys.stdout.buffer, sys.stderr, keep_going)
        sys.exit(status)

    server_options = [
        click.Option(["--keep-going"], is_flag=True,
                     help="After an ERROR reply, keep serving instead of exiting non-zero."),
        click.Option(["--info"], is_flag=True,
                     help="Print the INFO JSON (name, stats, signature) and exit."),
    ]
    return click.Command(
        name=f"{evaluator_class.name}-evaluator",
        params=[*evaluator_class.options, *server_options],
        callback=run,
        help=(f"Serve the {evaluator_class.name} metric over the SCORE/EVAL protocol on "
              f"stdin/stdout. {evaluator_class.describe()}"),
        context_settings={"help_option_names": ["-h", "--help"]},
    )
