"""Serving an evaluator over stdin/stdout: the loop behind every `*-evaluator` script.

One reply line per request. The requests that have arrived together are computed
together, and their replies are flushed together, before the server reads again: no
reply ever waits in a buffer while the server waits for input, so a client that sends
one request and waits is answered at once, while a client that pipelines many does
not pay a write per reply. A request that cannot be served gets one
`ERROR` line (and the same message on stderr); then the server exits non-zero unless
it was started with --keep-going, because the tuners that speak this protocol do not
read replies carefully (docs/protocol.md).
"""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Protocol, Sequence, TextIO, Union

import click
import numpy as np

from evalproto.base.compiled import compiled, pure_python
from evalproto.base.errors import EvalprotoError
from evalproto.base.items import Item
from evalproto.base.numerals import format_number, format_numbers
from evalproto.wire.protocol import (
    MAX_LINE_BYTES,
    EvalRequest,
    LineTooLong,
    Request,
    RequestError,
    ScoreRequest,
    arrived_lines,
    format_error,
    format_rows,
    parse_request,
)


class Evaluator(Protocol):
    """What the server needs of an evaluator (evalproto.metrics.evaluator.Evaluator
    builds on this module, not the other way round)."""

    name: str
    options: Sequence[click.Parameter]
    stat_names: Sequence[str]

    def stats_many(self, items: Sequence[ScoreRequest]) -> Any: ...

    def stats_batch(self, items: Sequence[ScoreRequest]) -> Any: ...

    def checked_stats(self, refs: Sequence[str], hyp: str) -> Sequence[float]: ...

    def checked_score(self, vector: Sequence[float]) -> float: ...

    def info(self) -> Dict[str, Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc_info: object) -> None: ...


def _parse_line(line: Union[bytes, LineTooLong]) -> Request:
    """One raw request line as a request; raises RequestError for a bad one."""
    if isinstance(line, LineTooLong):
        raise RequestError(f"request is longer than {MAX_LINE_BYTES >> 20} MiB; it was "
                           f"skipped to its end")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(
            f"request is not valid UTF-8: byte 0x{line[exc.start]:02x} at offset {exc.start}"
        ) from None
    return parse_request(text)


def _answer(evaluator: Evaluator, request: Request) -> str:
    """The reply line to one request."""
    if isinstance(request, Item):
        return format_numbers(evaluator.checked_stats(request.refs, request.hyp)) + "\n"
    if isinstance(request, EvalRequest):
        return format_number(evaluator.checked_score(request.vector)) + "\n"
    return json.dumps(evaluator.info(), ensure_ascii=False) + "\n"


def _replies(evaluator: Evaluator, lines: List[Union[bytes, LineTooLong]]
             ) -> Iterator[Union[str, Exception]]:
    """The reply to each line, or the exception that stands in for it. The SCOREs are
    computed together (`stats_many`, which a metric may do in bulk); if that fails,
    each is computed alone, so that the failure is pinned to its request."""
    requests: List[Union[Request, RequestError]] = []
    for line in lines:
        try:
            requests.append(_parse_line(line))
        except RequestError as exc:
            requests.append(exc)
    scores = [request for request in requests if isinstance(request, Item)]
    rows = None
    if len(scores) > 1:
        try:
            rows = iter(format_rows(evaluator.stats_many(scores)))
        except Exception:
            rows = None  # each SCORE is answered alone below, and fails alone
    for request in requests:
        if isinstance(request, RequestError):
            yield request
        elif rows is not None and isinstance(request, Item):
            yield next(rows) + "\n"
        else:
            try:
                yield _answer(evaluator, request)
            except Exception as exc:
                yield exc


def _score_replies(evaluator: Evaluator, lines: List[Union[bytes, LineTooLong]]
                   ) -> Optional[bytes]:
    """The replies to a batch of well-formed SCORE lines, the usual batch of a tuner,
    parsed and formatted by the compiled code (evalproto.wire._lines). None for any
    other batch, or when scoring or formatting it fails: `_replies` then answers the
    batch line by line, and says which line fails and why. With EVALPROTO_PURE_PYTHON=1
    every batch goes that way."""
    if pure_python():
        return None
    native = compiled("evalproto.wire._lines")
    items = native.score_requests(lines, ScoreRequest)
    if items is None:
        return None
    try:  # the items are checked already: stats_batch, not stats_many
        rows = np.ascontiguousarray(evaluator.stats_batch(items), dtype=np.float64)
        return native.format_rows(rows, len(items), len(evaluator.stat_names))
    except Exception:
        return None


def serve(evaluator: Evaluator, requests: BinaryIO, replies: BinaryIO, log: TextIO,
          keep_going: bool = False) -> int:
    """Answer requests until end of input; return the process exit status. Requests
    that have already arrived are answered together, and their replies are written
    and flushed at once before the server waits for more, so a client that waits for
    each reply is answered at once."""
    number = 0
    for lines in arrived_lines(requests):
        block = _score_replies(evaluator, lines)
        if block is not None:
            number += len(lines)
            if not _send(replies, block):
                return 1
            continue
        answered: List[str] = []
        for reply in _replies(evaluator, lines):
            number += 1
            if isinstance(reply, Exception):  # an evaluator bug must not desynchronize
                detail = str(reply) if isinstance(reply, (RequestError, ValueError)) else (
                    f"{type(reply).__name__}: {reply}")
                reply = format_error(f"request {number}: {detail}")
                log.write(f"{evaluator.name}-evaluator: {reply}")
                log.flush()
                if not keep_going:
                    _send(replies, _encoded([*answered, reply]))
                    return 1
            answered.append(reply)
        if not _send(replies, _encoded(answered)):
            return 1
    return 0


def _encoded(lines: List[str]) -> bytes:
    return "".join(lines).encode("utf-8", "backslashreplace")


def _send(replies: BinaryIO, block: bytes) -> bool:
    """Write and flush reply lines; False if the client has gone away."""
    try:
        replies.write(block)
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
        if sys.stdin.isatty():  # started by hand, where a tuner would pipe requests in
            sys.stderr.write(f"{evaluator_class.name}-evaluator: reading SCORE/EVAL requests "
                             f"from standard input, one per line; Ctrl-D ends (--help for "
                             f"more)\n")
            sys.stderr.flush()
        with evaluator:
            status = serve(evaluator, sys.stdin.buffer, sys.stdout.buffer, sys.stderr,
                           keep_going)
        # The client waits for our exit. Spare it the interpreter's last garbage
        # collections, which walk every object numpy and the metric's caches made.
        gc.freeze()
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
              f"stdin/stdout. {evaluator_class.describe()}"),  # type: ignore[attr-defined]
        context_settings={"help_option_names": ["-h", "--help"]},
    )
