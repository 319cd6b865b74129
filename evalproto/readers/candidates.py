"""Candidate lists for minimum Bayes risk decoding: JSON Lines, each line a JSON list of
strings (one source sentence's candidates, or its pseudo-references), as mbrs and
sampling scripts write them. Every line counts, so that the n-th choice is the n-th
line's: an empty line, or anything but a non-empty list of strings, is an error that
names the file and the line."""

from __future__ import annotations

from typing import Any, List

from evalproto.base.errors import InputError
from evalproto.base.gcpause import paused_gc
from evalproto.readers.text import decode_json_line, read_bytes


def read_text_lists(path: str, what: str) -> List[List[str]]:
    """Each line of `path` (a file, '-' for standard input, .gz decompressed) as a
    non-empty list of strings; `what` names them in errors ("candidates")."""
    data = read_bytes(path)
    lines = data.split(b"\n")
    if lines[-1] == b"":  # the last line's end
        lines.pop()
    if not lines:
        raise InputError(f"{path}: the file is empty; expected a JSON list of {what} a line")
    with paused_gc():
        return [_texts(line, path, number, what) for number, line in enumerate(lines, 1)]


def _texts(line: bytes, path: str, number: int, what: str) -> List[str]:
    if not line or line.isspace():
        raise InputError(f"{path}: line {number}: the line is empty; expected a JSON list of "
                         f"strings (the line's {what})")
    value = decode_json_line(path, number, line)
    if not isinstance(value, list) or not value or not all(isinstance(text, str)
                                                            for text in value):
        found = ("an empty list" if value == [] else
                 "a list with a non-string item (" + next(
                     type(v).__name__ for v in value if not isinstance(v, str)) + ")"
                 if isinstance(value, list) else f"a JSON {_json_type(value)}")
        raise InputError(f"{path}: line {number}: expected a non-empty JSON list of strings "
                         f"(the line's {what}), found {found}")
    return value


def _json_type(value: Any) -> str:
    return {dict: "object", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")
