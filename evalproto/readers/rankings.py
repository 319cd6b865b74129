"""Open-Assistant's human judgements of assistant replies, for meta-evaluation: the
`rank` of each reply among its siblings (0 is the best), or a label's value
(`labels: {"quality": {"value": 0.5, "count": 3}}`), and a scorer's scores of the same
replies, `{"message_id": ..., "score": ...}` a line.

Exports are read as corpus-score reads them (evalproto.readers.datasets: message,
thread or tree rows; a thread export repeats the messages threads share, which must
then agree). The replies to one message are an item and each reply a "system", so the
statistics compare siblings as mt-metrics-eval compares the systems of a segment: the
human score of a reply is minus its rank (higher is better) or its label's value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from evalproto.base.errors import InputError
from evalproto.readers.datasets import messages, read_jsonl
from evalproto.readers.metascores import Tables, and_more

RANK = "rank"


@dataclass
class Replies:
    """The judged replies of an export, grouped by the message they reply to: `prompts`
    (their ids, in the order the export first gives a judged reply), each one's
    `replies` (ids) and their `human` scores (minus the rank, or the label's value)."""

    path: str
    judgement: str
    prompts: List[str]
    replies: List[List[str]]
    human: List[List[float]]
    messages: frozenset

    @property
    def count(self) -> int:
        return sum(len(replies) for replies in self.replies)


def _finite(value: Any) -> Optional[float]:
    """A JSON value as a finite number, or None if it is none (true and false are not
    numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        return None
    return float(value)


def _judgement(message: Dict[str, Any], label: Optional[str], where: str) -> Optional[float]:
    """A reply's human score: minus its rank, or its label's value; None if it has none."""
    if label is None:
        rank = message.get(RANK)
        if rank is None:
            return None
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise InputError(f"{where}: a reply's 'rank' must be a whole number >= 0 (0 is the "
                             f"best) or null, found {rank!r}")
        return float(-rank)
    labels = message.get("labels")
    if labels is None:
        return None
    if not isinstance(labels, dict):
        raise InputError(f"{where}: 'labels' must be an object of label names")
    found = labels.get(label)
    if found is None:
        return None
    value = _finite(found.get("value") if isinstance(found, dict) else found)
    if value is None:
        raise InputError(f"{where}: the label {label!r} must hold a finite 'value', found "
                         f"{found!r}")
    return value


def read_oasst_replies(path: str, label: Optional[str] = None) -> Replies:
    """Every assistant reply of an Open-Assistant export that has a rank (or, with
    `label`, that label), grouped by the message it replies to: `.prompts` (the ids of
    the messages replied to), `.replies` (each one's judged replies' ids) and `.human`
    (their scores: minus the rank, or the label's value)."""
    seen: Dict[str, Tuple[Optional[str], Optional[float], int]] = {}
    groups: Dict[str, List[Tuple[str, float]]] = {}
    known = set()
    labels_found: set = set()
    for number, row in read_jsonl(path):
        for message, structural_parent in messages(row, path, number):
            key = message.get("message_id")
            if isinstance(key, str):
                known.add(key)
            if message.get("role") != "assistant":
                continue
            where = f"{path}: line {number}"
            if not isinstance(key, str):
                raise InputError(f"{where}: an assistant message needs a string 'message_id'")
            parent = message.get("parent_id", structural_parent)
            if isinstance(message.get("labels"), dict):
                labels_found.update(message["labels"])
            score = _judgement(message, label, where)
            if key in seen:
                if seen[key][:2] != (parent, score):
                    raise InputError(f"{where}: message {key!r} appears again (first on line "
                                     f"{seen[key][2]}) with another parent or "
                                     f"{label or RANK}")
                continue
            seen[key] = (parent, score, number)
            if score is None:
                continue
            if not isinstance(parent, str):
                raise InputError(f"{where}: the reply {key!r} has no 'parent_id': a judged "
                                 f"reply must say which message it replies to")
            groups.setdefault(parent, []).append((key, score))
    if not groups:
        if label is not None:
            found = ", ".join(sorted(map(str, labels_found))) or "none"
            raise InputError(f"{path}: no assistant reply has the label {label!r} (labels "
                             f"found: {found})")
        raise InputError(f"{path}: no assistant reply has a rank; rankings need replies "
                         f"with 'rank' (or choose a label)")
    return Replies(path, label or RANK, list(groups),
                   [[key for key, _ in group] for group in groups.values()],
                   [[score for _, score in group] for group in groups.values()],
                   frozenset(known))


def read_message_scores(path: str, replies: Replies) -> Dict[str, float]:
    """A scorer's score of every judged reply, from `{"message_id", "score"}` lines: a
    message the export does not have, a repeated one, or a judged reply without a score
    is an error."""
    scores: Dict[str, float] = {}
    lines: Dict[str, int] = {}
    for line_number, row in read_jsonl(path):
        where = f"{path}: line {line_number}"
        key, score = row.get("message_id"), row.get("score")
        if not isinstance(key, str):
            raise InputError(f"{where}: expected {{\"message_id\": \"...\", \"score\": number}}"
                             f", with a string message_id")
        number = _finite(score)
        if number is None:
            raise InputError(f"{where}: the score of {key!r} must be a finite number, found "
                             f"{score!r}")
        if key in scores:
            raise InputError(f"{where}: a second score of {key!r} (the first is on line "
                             f"{lines[key]})")
        if key not in replies.messages:
            raise InputError(f"{where}: message {key!r} is not in {replies.path}")
        scores[key], lines[key] = number, line_number
    return check_message_scores(path, scores, replies)


def check_message_scores(source: str, scores: Mapping[str, float], replies: Replies
                         ) -> Dict[str, float]:
    """A scorer's scores of the judged replies (from `source`), each checked: every
    judged reply needs a finite number."""
    missing = [key for group in replies.replies for key in group if key not in scores]
    if missing:
        raise InputError(f"{source}: no score of the reply {missing[0]!r}, which "
                         f"{replies.path} judges{and_more(missing)}")
    checked = {}
    for group in replies.replies:
        for key in group:
            number = _finite(scores[key])
            if number is None:
                raise InputError(f"{source}: the score of {key!r} must be a finite number, "
                                 f"found {scores[key]!r}")
            checked[key] = number
    return checked


def reply_tables(replies: Replies, scorers: Mapping[str, Mapping[str, float]]) -> Tables:
    """Replies and their scores as tables: an item per prompt, a "system" per place
    among its judged replies (NaN where a prompt has fewer)."""
    places = max(len(group) for group in replies.replies)
    human = np.full((places, len(replies.prompts)), math.nan)
    for item, judged in enumerate(replies.human):
        human[:len(judged), item] = judged
    metrics = {}
    for name, scores in scorers.items():
        table = np.full(human.shape, math.nan)
        for item, group in enumerate(replies.replies):
            table[:len(group), item] = [scores[key] for key in group]
        metrics[name] = table
    return Tables([f"reply {place}" for place in range(1, places + 1)], human, metrics)
