"""Numbers as text: one strict reading and one lossless writing, for every file and pipe.

Python's float() reads far more than a statistic: "nan", "infinity", "1_000", and digits
of any script ("١٢", "１２"). A number in a stats file, a reply, a surprisal table or an
option is an ASCII decimal, as cdec, Moses and we write them, and it is finite.
JSON cannot hold NaN or infinities either, so JSON output goes through `to_json`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import fields, is_dataclass
from typing import Any, Iterable

DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z", re.ASCII)


def parse_number(text: str) -> float:
    """A finite ASCII decimal such as "12", "-0.5" or "1.23457e+06". Otherwise a
    ValueError whose message completes a sentence about the value ("number 3 " + it):
    "is not a finite number: 'x'" or "overflows a double: '1e999'"."""
    if not DECIMAL.match(text):
        raise ValueError(f"is not a finite number: {shorten(text)}")
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"overflows a double: {shorten(text)}")
    return value


MOST_DIGITS = 4300
"""The longest number int() reads (Python 3.11's default limit of digits)."""


def is_whole_number(text: str) -> bool:
    """Whether `text` is ASCII digits and nothing else, such as "12", few enough for
    int(): a count in an option, a header or an id. str.isdigit alone takes "²", which
    int() refuses, and int() refuses 5,000 digits."""
    return text.isascii() and text.isdigit() and len(text) <= MOST_DIGITS


def shorten(text: str, limit: int = 80) -> str:
    """repr() of text cut to a readable length, for messages about huge fields."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} characters)"


def format_number(value: float) -> str:
    """Lossless text for a finite number: integral values without a decimal point,
    others as the shortest repr that reads back to the same double."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot write {value!r}: statistics and scores must be finite")
    if value.is_integer():
        return str(int(value))
    return repr(value)


def format_numbers(values: Iterable[float], separator: str = " ") -> str:
    return separator.join(format_number(value) for value in values)


def json_number(value: float) -> int | float | None:
    """A number for JSON: integral values as integers, other finite values as floats,
    and None (null) for NaN and infinities, which JSON cannot hold."""
    value = float(value)
    if not math.isfinite(value):
        return None
    return int(value) if value.is_integer() else value


def plain_data(tree: Any) -> Any:
    """`tree` as plain data for JSON and for Python callers: numpy scalars and arrays as
    Python numbers and lists, dataclasses as dicts of their fields, tuples as lists,
    and every non-finite float as None."""
    if getattr(tree, "ndim", None) == 0:  # a numpy scalar, float32 included
        tree = tree.item()
    elif hasattr(tree, "tolist"):  # a numpy array
        tree = tree.tolist()
    elif is_dataclass(tree) and not isinstance(tree, type):
        tree = {field.name: getattr(tree, field.name) for field in fields(tree)}
    if isinstance(tree, float):
        return tree if math.isfinite(tree) else None
    if isinstance(tree, dict):
        return {key: plain_data(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [plain_data(value) for value in tree]
    return tree


def to_json(tree: Any, **options: Any) -> str:
    """json.dumps that never writes NaN or Infinity (which are not JSON): a figure that
    is not a finite number, such as an overflowing perplexity, becomes null."""
    return json.dumps(plain_data(tree), allow_nan=False, ensure_ascii=False, **options)
