"""Segment scores computed elsewhere (COMET, BLEURT, MetricX, human judgements), read
from the files metrics write, one score per segment in segment order:

- plain text: one number per line (ASCII decimals, as every number evalproto reads);
- JSON Lines: one object per line, the score under a key (`field`);
- comet-score's printout: `FILE<TAB>Segment I<TAB>score: X` per segment (I from 0),
  then `FILE<TAB>score: X` per translation file; with several files (comet-score -t A
  B), `field` names the one to take. comet-score prints 4 decimals, so the scores are
  rounded to 4 decimals; the segments' mean is checked against its system score.

A line that is not what its format needs is an error naming the file and the line.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from evalproto.base.errors import InputError
from evalproto.base.numerals import parse_number, shorten
from evalproto.readers.text import read_bytes, split_lines

COMET_SEGMENT = re.compile(r"(?P<file>.*)\tSegment (?P<index>[0-9]+)\tscore: (?P<score>\S+)"
                           r"(?:\tvariance: \S+)?\Z", re.DOTALL)
COMET_SYSTEM = re.compile(r"(?P<file>.*)\tscore: (?P<score>\S+)\Z", re.DOTALL)
COMET_SAVED = "Predictions saved in: "
COMET_DECIMALS = 4


@dataclass
class Scores:
    """Segment scores, and the line each came from."""

    values: List[float]
    lines: List[int]


def read_scores(path: str, field: Optional[str] = None) -> Scores:
    """The segment scores of a file: comet-score's printout if its first line is one
    of its segment lines, JSON Lines if `field` is given, one number per line otherwise."""
    lines = split_lines(path, read_bytes(path))
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise InputError(f"{path}: file is empty; expected one segment score per line")
    if COMET_SEGMENT.match(lines[0]):
        return _comet(path, lines, field)
    if field is not None:
        return _jsonl(path, lines, field)
    return _plain(path, lines)


def _plain(path: str, lines: List[str]) -> Scores:
    values = []
    for number, line in enumerate(lines, 1):
        try:
            values.append(parse_number(line.strip()))
        except ValueError as exc:
            found = "an empty line" if not line.strip() else f"a line that {exc}"
            hint = " (a JSON Lines file needs `field`)" if line.lstrip().startswith("{") else ""
            raise InputError(f"{path}: line {number}: expected one number (a segment score) "
                             f"per line, found {found}{hint}") from None
    return Scores(values, list(range(1, len(values) + 1)))


def _jsonl(path: str, lines: List[str], field: str) -> Scores:
    values = []
    for number, line in enumerate(lines, 1):
        where = f"{path}: line {number}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{where}: not JSON ({exc}); expected one JSON object per "
                             f"line") from None
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object with the field {field!r}")
        if field not in row:
            keys = ", ".join(map(repr, list(row)[:8])) or "none"
            raise InputError(f"{where}: no field {field!r} (the object's fields: {keys})")
        value = row[field]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            raise InputError(f"{where}: the field {field!r} holds {json.dumps(value)[:60]}; "
                             f"expected a finite number")
        values.append(float(value))
    return Scores(values, list(range(1, len(values) + 1)))


def _comet_number(path: str, number: int, text: str) -> float:
    try:
        return parse_number(text)
    except ValueError as exc:
        raise InputError(f"{path}: line {number}: the score {exc}") from None


def _comet(path: str, lines: List[str], chosen: Optional[str]) -> Scores:
    segments: Dict[str, List[Tuple[float, int]]] = {}
    systems: Dict[str, float] = {}
    for number, line in enumerate(lines, 1):
        found = COMET_SEGMENT.match(line)
        if found:
            name, index = found["file"], int(found["index"])
            scores = segments.setdefault(name, [])
            if name in systems or index != len(scores):
                raise InputError(f"{path}: line {number}: segment {index} of {name}, but "
                                 f"segment {len(scores)} comes next; is the output edited?")
            scores.append((_comet_number(path, number, found["score"]), number))
            continue
        found = COMET_SYSTEM.match(line)
        if found and found["file"] in segments and found["file"] not in systems:
            systems[found["file"]] = _comet_number(path, number, found["score"])
            continue
        if line.startswith(COMET_SAVED):
            continue
        raise InputError(f"{path}: line {number}: not a line of comet-score's output: "
                         f"{shorten(line)}; expected 'FILE<tab>Segment N<tab>score: X' or "
                         f"'FILE<tab>score: X'")
    names = list(segments)
    if chosen is None and len(names) > 1:
        raise InputError(f"{path}: comet-score's output holds the scores of "
                         f"{len(names)} files ({', '.join(map(repr, names))}); name the "
                         f"one to import with `field`")
    name = names[0] if chosen is None else chosen
    if name not in segments:
        raise InputError(f"{path}: comet-score's output has no scores of {name!r}; it has "
                         f"{', '.join(map(repr, names))}")
    if name not in systems:
        raise InputError(f"{path}: the output is incomplete: it has no system score line "
                         f"for {name}; was it cut short?")
    values = [value for value, _ in segments[name]]
    mean = math.fsum(values) / len(values)
    # each score and the system score are rounded to 4 decimals: half a unit each
    if abs(mean - systems[name]) > 10 ** -COMET_DECIMALS + 1e-9:
        raise InputError(f"{path}: the {len(values)} segment scores of {name} average "
                         f"{mean:.6f}, but comet-score's system score is {systems[name]}; "
                         f"is the output incomplete or edited?")
    return Scores(values, [line for _, line in segments[name]])
