"""Scores for meta-evaluation: mt-metrics-eval's score files, and the tables of systems x
items that its statistics read.

A score file has one line a score, `SYSTEM<TAB>SCORE` (any whitespace between the two,
as mt-metrics-eval splits them), each system's segments in order, its lines possibly
interleaved with other systems'; `None` is a missing score. A system-level file has one
line a system. Scores are ASCII decimals, as every number evalproto reads.

Tables are aligned as mt-metrics-eval aligns them: the systems are the human scores'
(without those that have no human score at all), every metric must score each of them,
item for item, and a metric's systems that people did not score are left out (the
references a metric scored, say). A metric cannot miss a score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.numerals import parse_number, shorten
from evalproto.readers.text import read_bytes, split_lines

MISSING = "None"
"""How a score file writes a missing score."""


@dataclass
class Scores:
    """Scores by system, each system's in item order (None: missing), from `source` (a
    file, or a name a caller gave), with the line of each score where there is one."""

    source: str
    by_system: Dict[str, List[Optional[float]]]
    lines: Optional[Dict[str, List[int]]] = None

    def where(self, system: str, item: int) -> str:
        """Where a score is, for messages: the file and line, or the system and item."""
        if self.lines is not None:
            return f"{self.source}: line {self.lines[system][item]}"
        return f"{self.source}: system {system!r}, item {item + 1}"


def read_score_file(path: str) -> Scores:
    """An mt-metrics-eval score file (`SYSTEM<TAB>SCORE` a line, each system's segments
    in order; `None`: missing): `.by_system` maps each system to its scores, in order
    (None where missing), and `.lines` to their line numbers. A line that is not a
    system and a number or None is an InputError that names it."""
    lines = split_lines(path, read_bytes(path))
    if not lines:
        raise InputError(f"{path}: file is empty; expected SYSTEM<TAB>SCORE lines")
    by_system: Dict[str, List[Optional[float]]] = {}
    numbers: Dict[str, List[int]] = {}
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if len(fields) != 2:
            found = "an empty line" if not fields else f"{len(fields)} fields: {shorten(line)}"
            raise InputError(f"{path}: line {number}: expected SYSTEM<TAB>SCORE (a system name "
                             f"without spaces and a number or None), found {found}")
        system, text = fields
        if text == MISSING:
            score = None
        else:
            try:
                score = parse_number(text)
            except ValueError as exc:
                raise InputError(f"{path}: line {number}: the score of {system} {exc}; "
                                 f"expected a number or None") from None
        by_system.setdefault(system, []).append(score)
        numbers.setdefault(system, []).append(number)
    return Scores(path, by_system, numbers)


def scores_of(source: str, by_system: Mapping[str, Sequence[Optional[float]]]) -> Scores:
    """Scores given in Python (system -> item scores, None missing), checked as numbers."""
    if not isinstance(by_system, Mapping):
        raise TypeError(f"{source}: scores are a mapping of system names to lists of scores, "
                        f"not {type(by_system).__name__}")
    checked: Dict[str, List[Optional[float]]] = {}
    for system, values in by_system.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"{source}: the scores of {system!r} must be a sequence of numbers")
        checked[str(system)] = [_number(source, system, item, value)
                                for item, value in enumerate(values)]
    return Scores(source, checked)


def _number(source: str, system: object, item: int, value: object) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, (bool, str, bytes)):
        raise TypeError(f"{source}: system {system!r}, item {item + 1}: {value!r} is not a "
                        f"number")
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number):
        return None
    if not math.isfinite(number):
        raise ValueError(f"{source}: system {system!r}, item {item + 1}: {number} is not a "
                         f"finite number")
    return number


@dataclass
class Tables:
    """Human and metric scores as systems x items arrays (NaN: no human score), in the
    human scores' order of systems."""

    systems: List[str]
    human: np.ndarray
    metrics: Dict[str, np.ndarray]

    @property
    def items(self) -> int:
        return self.human.shape[1]


def _items(scores: Scores) -> int:
    """The one number of items that every system of `scores` has."""
    counts = {system: len(values) for system, values in scores.by_system.items()}
    first = next(iter(counts))
    for system, count in counts.items():
        if count != counts[first]:
            raise InputError(f"{scores.source}: system {system!r} has {_scores(count)} but "
                             f"{first!r} has {counts[first]}; every system needs one score "
                             f"per item (segment)")
    return counts[first]


def and_more(missing: Sequence[object]) -> str:
    """The end of a message about the first of `missing`: how many more there are."""
    return f" (nor of {len(missing) - 1} more)" if len(missing) > 1 else ""


def _scores(count: int) -> str:
    return f"{count} score" + ("" if count == 1 else "s")


def align(human: Scores, metrics: Mapping[str, Scores]) -> Tables:
    """The tables of human scores and of each metric's: see the module's rules."""
    if not human.by_system:
        raise InputError(f"{human.source}: no scores")
    items = _items(human)
    systems = [system for system, values in human.by_system.items()
               if any(value is not None for value in values)]
    if not systems:
        raise InputError(f"{human.source}: every score is None: there are no human scores")
    table = np.array([[math.nan if value is None else value for value in human.by_system[s]]
                      for s in systems], dtype=np.float64)
    tables = {}
    for name, scores in metrics.items():
        missing = [system for system in systems if system not in scores.by_system]
        if missing:
            raise InputError(f"{scores.source} has no scores of system {missing[0]!r}, which "
                             f"{human.source} scores{and_more(missing)}")
        for system in systems:
            values = scores.by_system[system]
            if len(values) != items:
                raise InputError(f"{scores.source}: system {system!r} has "
                                 f"{_scores(len(values))} but {human.source} has {items} per "
                                 f"system; the metric needs one score per item")
            if None in values:
                raise InputError(f"{scores.where(system, values.index(None))}: None, but a "
                                 f"metric needs a score for every item (only human scores "
                                 f"may be missing)")
        tables[name] = np.array([scores.by_system[system] for system in systems],
                                dtype=np.float64)
    return Tables(systems, table, tables)
