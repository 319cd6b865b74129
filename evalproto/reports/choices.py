"""Minimum Bayes risk choices as `evalproto mbr` writes them: the chosen candidates, a
line each, or JSON Lines of {"index", "text", "expected"}."""

from __future__ import annotations

from typing import Any, Sequence

from evalproto.base.errors import InputError
from evalproto.base.numerals import to_json

FORMATS = ("text", "json")


def format_choices(choices: Sequence[Any], output_format: str = "text") -> str:
    """The choices (evalproto.api.mbr.MBRChoice) in `output_format`: "text", the chosen
    text of each line (a text holding a line break would forge a line: an error that
    points to json), or "json"."""
    if output_format == "json":
        return "".join(to_json(choice.to_dict()) + "\n" for choice in choices)
    for number, choice in enumerate(choices, 1):
        if "\n" in choice.text or "\r" in choice.text:
            raise InputError(f"line {number}: the chosen candidate holds a line break, which "
                             f"would end its line of text output: write JSON (`output_format` "
                             f"json) instead")
    return "".join(choice.text + "\n" for choice in choices)
