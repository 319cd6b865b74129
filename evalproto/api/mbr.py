"""Minimum Bayes risk decoding: of each source sentence's candidates, the one whose
expected score against the others is best.

    >>> import evalproto
    >>> choices = evalproto.mbr([["the cat sat", "a cat sat", "the cat sat down"]])
    >>> choices[0].index, choices[0].text
    (2, 'the cat sat down')

The expected score of a candidate is the mean of its sentence scores against the line's
pseudo-references: its candidates themselves (itself included), or references given
apart. Lines of the same shape are scored together, by the metric's all-pairs matrices
(`Metric.pairwise_scores`).
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from evalproto.api.scoring import Metric, load
from evalproto.base.errors import InputError
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics.pairwise import checked_sequence, checked_texts
from evalproto.readers.candidates import read_text_lists
from evalproto.sources.specs import MetricSpec

CELLS_AT_ONCE = 1 << 21
"""The most scores computed in one call (16 MiB of them): lines of one shape go in
groups of about this many, so that progress moves and memory stays bounded."""


@dataclass(frozen=True)
class MBRChoice:
    """One line's choice: the candidate's index among the line's candidates (from 0),
    its text, and its expected score (the mean of its sentence scores against the
    line's pseudo-references, summed exactly)."""

    index: int
    text: str
    expected: float

    def to_dict(self) -> Dict[str, Any]:
        """The choice as plain data, as `evalproto mbr -f json` writes it."""
        return {"index": self.index, "text": self.text, "expected": self.expected}


def mbr(candidates: Sequence[Sequence[str]], metric: Union[str, MetricSpec, Metric] = "chrf",
        references: Optional[Sequence[Sequence[str]]] = None, *,
        progress: Progress = QUIET) -> List[MBRChoice]:
    """For each line of candidates (a list of strings per source sentence), the
    candidate with the best mean sentence score under `metric` against all of the
    line's candidates, itself included, or against `references[i]` (the line's
    pseudo-references, when given): the highest, or for a metric where lower is
    better (TER) the lowest; the first of equals. `metric` is a spec ("chrf", "bleu",
    "chrf --word-order 2", "ter"), a MetricSpec or a Metric from load()."""
    lines, pseudo = _checked_lines(candidates, references)
    with ExitStack() as stack:
        scorer = _opened(metric, stack)
        best = max if scorer.higher_is_better else min
        choices: List[Optional[MBRChoice]] = [None] * len(lines)
        phase = progress.start(f"mbr: {scorer.label}", len(lines))
        for shape, numbers in _by_shape(lines, pseudo).items():
            step = max(1, CELLS_AT_ONCE // (shape[0] * shape[1]))
            for first in range(0, len(numbers), step):
                group = numbers[first:first + step]
                refs = None if pseudo is None else [pseudo[n] for n in group]
                scores = scorer.pairwise_scores([lines[n] for n in group], refs)
                for number, matrix in zip(group, scores):
                    expected = [math.fsum(row) / len(row) for row in matrix.tolist()]
                    index = expected.index(best(expected))
                    choices[number] = MBRChoice(index, lines[number][index], expected[index])
                phase.advance(len(group))
        phase.close()
    return [choice for choice in choices if choice is not None]


def mbr_files(candidates: str, metric: Union[str, MetricSpec, Metric] = "chrf",
              references: Optional[str] = None, *, progress: Progress = QUIET
              ) -> List[MBRChoice]:
    """`mbr` of a JSON Lines file, a list of candidates a line ('-': standard input),
    with the pseudo-references of another such file, line by line, if given."""
    lines = read_text_lists(candidates, "candidates")
    pseudo = None if references is None else read_text_lists(references, "references")
    if pseudo is not None and len(pseudo) != len(lines):
        raise InputError(f"{references} has {len(pseudo)} lines but {candidates} has "
                         f"{len(lines)}: each line holds the references of the same line's "
                         f"candidates")
    return mbr(lines, metric, pseudo, progress=progress)


def _checked_lines(candidates: Any, references: Any
                   ) -> Tuple[List[List[str]], Optional[List[List[str]]]]:
    """Lines of candidates (and of references), each a non-empty list of strings; lines
    may differ in length. A TypeError or ValueError says what was expected."""
    lines = _lines(candidates, "candidates")
    if references is None:
        return lines, None
    pseudo = _lines(references, "references")
    if len(pseudo) != len(lines):
        raise ValueError(f"references holds {len(pseudo)} lines but candidates holds "
                         f"{len(lines)}: references[i] lists line i's pseudo-references")
    return lines, pseudo


def _lines(value: Any, name: str) -> List[List[str]]:
    lines = []
    for number, line in enumerate(checked_sequence(value, name, "lines, each a list of strings")):
        checked_sequence(line, f"{name}[{number}]", "strings")
        if not line:
            raise ValueError(f"{name}[{number}] is empty: each line needs one at least")
        lines.append(checked_texts(line, f"{name}[{number}]"))
    return lines


def _by_shape(lines: List[List[str]], pseudo: Optional[List[List[str]]]
              ) -> Dict[Tuple[int, int], List[int]]:
    """Line numbers by (candidates, references), in order."""
    shapes: Dict[Tuple[int, int], List[int]] = {}
    for number, line in enumerate(lines):
        shape = (len(line), len(line if pseudo is None else pseudo[number]))
        shapes.setdefault(shape, []).append(number)
    return shapes


def _opened(metric: Union[str, MetricSpec, Metric], stack: ExitStack) -> Metric:
    """The metric to score with: a Metric as it is, or one loaded here and closed with
    `stack`."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str):
        return stack.enter_context(load(metric))
    if isinstance(metric, MetricSpec):
        return stack.enter_context(Metric(metric))
    raise TypeError(f"metric must be a spec such as 'chrf', a MetricSpec or a Metric from "
                    f"load(), got {type(metric).__name__}")
