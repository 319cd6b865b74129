"""The SCORE/EVAL line protocol: parsing request lines and formatting reply lines.

Both ends of the pipe use these functions, so the server and the client agree on
separators, spellings (cdec's, Moses') and number formatting by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain
from typing import BinaryIO, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np

from evalproto.base.compiled import compiled, pure_python
from evalproto.base.errors import InputError
from evalproto.base.items import Item
from evalproto.base.numerals import format_numbers, parse_number, shorten

SEPARATOR = "|||"
PROTOCOL_VERSION = 1
_READ_SIZE = 1 << 16


class RequestError(ValueError):
    """A request line that cannot be served; its message becomes the ERROR reply."""


ScoreRequest = Item
"""A SCORE request is the (refs, hyp) item that evaluators take."""


@dataclass(frozen=True)
class EvalRequest:
    vector: tuple[float, ...]


@dataclass(frozen=True)
class InfoRequest:
    pass


Request = Union[ScoreRequest, EvalRequest, InfoRequest]


def parse_request(line: str) -> Request:
    """Parse one request line (with or without its final newline)."""
    if line.endswith("\n"):
        line = line[:-1]
    fields = [field.strip() for field in line.split(SEPARATOR)]
    command = fields[0]
    if command == "INFO" and (len(fields) == 1 or fields[1:] == [""]):
        return InfoRequest()
    if len(fields) == 1:
        raise RequestError(
            f"no '{SEPARATOR}' in request {shorten(line)}; expected "
            f"'SCORE {SEPARATOR} ref {SEPARATOR} hyp', 'EVAL {SEPARATOR} numbers' or 'INFO'")
    if command == "SCORE":
        if len(fields) < 3:
            raise RequestError(
                f"SCORE needs at least one reference and a hypothesis: "
                f"'SCORE {SEPARATOR} ref {SEPARATOR} hyp', got {len(fields) - 1} field(s)")
        return ScoreRequest(refs=tuple(fields[1:-1]), hyp=fields[-1])
    if command == "EVAL":
        if len(fields) != 2:
            raise RequestError(
                f"EVAL takes one field of numbers, got {len(fields) - 1} fields")
        return EvalRequest(parse_numbers(fields[1]))
    raise RequestError(f"unknown command {shorten(command)}; expected SCORE, EVAL or INFO")


def parse_numbers(text: str) -> tuple[float, ...]:
    """Whitespace-separated finite numbers, e.g. a SCORE reply or an EVAL vector."""
    if text.isascii() and "_" not in text:
        # Fast path. For ASCII without underscores, float() accepts exactly the decimal
        # syntax below plus nan/inf/infinity, which the finiteness check turns away.
        try:
            numbers = tuple(float(token) for token in text.split())
        except ValueError:
            pass
        else:
            if all(math.isfinite(value) for value in numbers):
                return numbers
    parsed = []
    for position, token in enumerate(text.split(), 1):
        try:
            parsed.append(parse_number(token))
        except ValueError as exc:
            raise RequestError(f"number {position} {exc}") from None
    return tuple(parsed)


def parse_rows(lines: List[str], width: int) -> Optional[np.ndarray]:
    """`parse_numbers` of many reply lines of `width` numbers each, as an (n, width)
    array, at a fraction of the cost (by the compiled code, see evalproto.wire._lines);
    None if any line is not that, so that the caller parses the lines one by one to
    learn which and why."""
    if not pure_python():
        values = compiled("evalproto.wire._lines").parse_rows(lines, width)
        return None if values is None else np.frombuffer(values).reshape(len(lines), width)
    tokens = [line.split() for line in lines]
    if set(map(len, tokens)) - {width}:
        return None
    text = "".join(lines)
    if not text.isascii() or "_" in text:  # as in parse_numbers' fast path
        return None
    try:
        values = np.fromiter(map(float, chain.from_iterable(tokens)), dtype=np.float64,
                             count=len(lines) * width)
    except ValueError:
        return None
    return values.reshape(len(lines), width) if np.isfinite(values).all() else None


MAX_LINE_BYTES = 64 << 20
"""The longest request or reply line either end reads (64 MiB). A peer that writes
without a line end would otherwise make the other buffer without bound."""


class LineTooLong:
    """Stands in a batch for a line that passed MAX_LINE_BYTES; the rest of that line, up
    to its end, is skipped, so that the stream stays in step."""

    def __repr__(self) -> str:
        return f"<a line longer than {MAX_LINE_BYTES} bytes>"


def arrived_lines(stream: BinaryIO, limit: int = MAX_LINE_BYTES
                  ) -> Iterator[List[Union[bytes, LineTooLong]]]:
    """The complete lines that have arrived in a pipe, a batch at a time, without their
    newlines; it waits for input only when no complete line is left, and a last line
    may lack its newline. The pieces of a long line are joined once, when its end
    arrives; a line longer than `limit` becomes a LineTooLong."""
    pending: List[bytes] = []
    held = 0  # bytes in pending
    skipping = False  # inside a line that was too long
    while chunk := stream.read1(_READ_SIZE):  # type: ignore[attr-defined]
        if skipping:
            end = chunk.find(b"\n")
            if end < 0:
                continue
            chunk, skipping = chunk[end + 1:], False
        if b"\n" not in chunk:
            pending.append(chunk)
            held += len(chunk)
            if held > limit:
                pending, held, skipping = [], 0, True
                yield [LineTooLong()]
            continue
        *lines, rest = b"".join([*pending, chunk]).split(b"\n")
        pending, held = ([rest], len(rest)) if rest else ([], 0)
        yield [LineTooLong() if len(line) > limit else line for line in lines]
    if pending:
        yield [b"".join(pending)]


def format_rows(rows: np.ndarray, separator: str = " ") -> List[str]:
    """`format_numbers` of each row of a 2-d array. Counts, the usual statistics, are
    formatted in bulk: converted to integers at once, not number by number."""
    if rows.size and np.all(np.abs(rows) < 2.0**53) and np.array_equal(rows, np.trunc(rows)):
        return [separator.join(map(str, row)) for row in rows.astype(np.int64).tolist()]
    return [format_numbers(row, separator) for row in rows]


def format_score_request(refs: Sequence[str], hyp: str) -> str:
    """One SCORE line. Text that would put the stream out of step, or that UTF-8
    cannot carry (a lone surrogate), is refused here."""
    for text in (*refs, hyp):
        if "\n" in text or SEPARATOR in text:
            raise ValueError(
                f"cannot send {shorten(text)} over the protocol: it contains "
                f"{'a newline' if chr(10) in text else repr(SEPARATOR)}")
        if not _encodable(text):
            raise ValueError(f"cannot send {shorten(text)} over the protocol: it holds "
                             f"a lone surrogate, which is not text")
    if not refs:
        raise ValueError("SCORE needs at least one reference")
    return f" {SEPARATOR} ".join(("SCORE", *refs, hyp)) + "\n"


def format_score_requests(items: Sequence[Item]) -> List[str]:
    """format_score_request of each (refs, hyp) item, made in bulk and checked
    together: a text with a newline or a separator adds one to the lines' count (our
    separators stand between spaces, so a text's "|||" cannot merge with one; an item
    without references has one separator too few), and one that UTF-8 cannot carry
    fails the block's encoding. Only then is each item checked, to name the first that
    cannot be sent (an InputError whose `item` is its index)."""
    spaced = f" {SEPARATOR} "
    lines = [f"SCORE{spaced}{spaced.join(refs)}{spaced}{hyp}\n" for refs, hyp in items]
    block = "".join(lines)
    separators = sum([len(refs) + 1 for refs, _ in items])
    if (block.count("\n") != len(lines) or block.count(SEPARATOR) != separators
            or not _encodable(block)):
        for index, (refs, hyp) in enumerate(items):
            try:
                format_score_request(refs, hyp)
            except ValueError as exc:
                raise InputError(str(exc), index) from None
    return lines


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def format_eval_request(vector: Iterable[float]) -> str:
    return f"EVAL {SEPARATOR} {format_numbers(vector)}\n"


def format_error(message: str) -> str:
    """One ERROR reply line: the message with any line breaks folded away."""
    return "ERROR " + " ".join(message.split()) + "\n"
