"""LM Challenge logs as stats rows, with the statistics of `lmc stats` (lmchallenge 5.2).

Every event of a wc, we, ce or wr log becomes one additive row: token and character
counts, next-word-prediction ranks (from `completions[0]`), word completion within
rank 2, cross-entropy (-logp, skipped when logp is null), reranking hits, and
indicators that a new user or message starts (lmc counts consecutive changes). The
two fingerprints are sums mod 2**32, so they are kept beside the float rows. Events
marked `"select": false` (e.g. by `lmc grep`) only count as skipped.

Reranking needs lmc's fit first: the interpolation model
`score = (1 - alpha) * error + max(alpha * lm, beta)` optimised for the number of
correct top candidates by scipy's Nelder-Mead `fmin` from lmc's starting point, on
the same float32 matrices, so the fit (and so every event's hit) is lmc's.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.errors import InputError
from evalproto.protocol import json_number
from evalproto.readers import parse_jsonl

HIT_RANKS = (1, 3, 10, 20)
COMPLETION_MAX_RANK = 2
STAT_NAMES = (
    "tokens", "characters", "skipped", "users", "messages",
    "prediction.srr", "prediction.hit", *(f"prediction.hit{n}" for n in HIT_RANKS),
    "completion.characters", "completion.tokens",
    "entropy.sum", "entropy.tokens", "entropy.characters",
    "reranking.base_correct", "reranking.correct",
)
COLUMN = {name: i for i, name in enumerate(STAT_NAMES)}
_MASK32 = 0xFFFFFFFF


@lru_cache(maxsize=2 ** 16)
def _string_hash(value: str) -> int:
    """The first 8 bytes of a string's MD5; users and targets repeat, so cached."""
    return struct.unpack("<Q", hashlib.md5(value.encode("utf8")).digest()[:8])[0]


def event_hash(*values: Any) -> int:
    """lmc's stable hash of (user, message, token, target) for fingerprints."""
    combined = 0
    for value in values:
        combined *= 48677
        if isinstance(value, str):
            combined += _string_hash(value)
        elif isinstance(value, (bool, int)):
            combined += 50123 * value
        elif value is None:
            combined += 49307
        else:
            raise ValueError(f"cannot fingerprint a {type(value).__name__}")
    return combined & _MASK32


def parse_log(path: str, data: bytes) -> List[Dict[str, Any]]:
    """The events of a JSON Lines log."""
    events = []
    for number, event in parse_jsonl(path, data):
        if not isinstance(event.get("target"), str):
            raise InputError(f"{path}: line {number}: expected an LM Challenge event, a JSON "
                             f"object with a string 'target'")
        events.append(event)
    if not events:
        raise InputError(f"{path}: no events; expected an LM Challenge log (JSON Lines)")
    return events


@dataclass
class Reranker:
    """lmc's InterpolationRerankingModel with its two parameters."""

    alpha: float
    beta: float

    def __call__(self, error: np.ndarray, lm: np.ndarray) -> np.ndarray:
        return (1 - self.alpha) * error + np.maximum(self.alpha * lm, self.beta)


def _candidate_matrix(events: Sequence[Dict[str, Any]], column: int) -> np.ndarray:
    """Error (column 1) or LM (column 2) scores, the target's candidates first, padded
    with -inf, as float32 like lmc's jagged matrices."""
    rows = []
    for event in events:
        results, target = event["results"], event["target"]
        ordered = [r for r in results if r[0] == target] + [r for r in results if r[0] != target]
        rows.append([-np.inf if r[column] is None else r[column] for r in ordered])
    width = max(len(row) for row in rows)
    matrix = np.full((len(rows), width), -np.inf, dtype=np.float32)
    for i, row in enumerate(rows):
        matrix[i, :len(row)] = np.array(row, dtype=np.float32)
    return matrix


def top_is_first(scores: np.ndarray) -> np.ndarray:
    """Per row: does the target (column 0) strictly beat every other candidate?"""
    return scores[:, 0] > scores[:, 1:].max(axis=1)


def fit_reranker(error: np.ndarray, lm: np.ndarray) -> Reranker:
    """lmc's fit: Nelder-Mead over (alpha, beta) maximising the correct count."""
    import scipy.optimize

    start = [0.5, 0.5 * float(np.median(lm[lm != -np.inf]))]
    alpha, beta = scipy.optimize.fmin(
        lambda args: -int(top_is_first(Reranker(*args)(error, lm)).sum()), x0=start, disp=False)
    return Reranker(alpha, beta)


@dataclass
class LogStats:
    """A log's per-event rows and what lmc reports beside the sums."""

    path: str
    rows: np.ndarray
    fingerprints: np.ndarray  # per event, lmc's event hash (0 when unselected)
    entropy_fingerprints: np.ndarray  # per event, when logp was scored
    users: List[Any]
    messages: List[Tuple[Any, Any]]
    max_candidates: int
    reranker: Optional[Reranker]


def log_stats(path: str, events: Sequence[Dict[str, Any]],
              reranker: Optional[Reranker] = None) -> LogStats:
    """Rows for every event; the reranker is fitted on the log unless one is given."""
    table: List[List[float]] = []  # Python lists: a numpy cell write per stat is slower
    fingerprints = [0] * len(events)
    entropy_fingerprints = [0] * len(events)
    previous_user: Any = object()
    previous_message: Any = object()
    reranked = []
    for i, event in enumerate(events):
        row = [0.0] * len(STAT_NAMES)
        table.append(row)
        if not event.get("select", True):
            row[COLUMN["skipped"]] = 1
            continue
        target = event["target"]
        user, message = event.get("user"), (event.get("user"), event.get("message"))
        row[COLUMN["users"]] = user != previous_user
        row[COLUMN["messages"]] = message != previous_message
        previous_user, previous_message = user, message
        row[COLUMN["tokens"]] = 1
        row[COLUMN["characters"]] = len(target)
        fingerprints[i] = event_hash(user, event.get("message"), event.get("token"), target)
        completions = event.get("completions")
        if completions is not None:
            _prediction(row, completions, target)
        if event.get("logp") is not None:
            row[COLUMN["entropy.sum"]] = -event["logp"]
            row[COLUMN["entropy.tokens"]] = 1
            row[COLUMN["entropy.characters"]] = len(target)
            entropy_fingerprints[i] = fingerprints[i]
        if event.get("results") is not None:
            reranked.append(i)
    rows = np.array(table, dtype=np.float64).reshape(len(events), len(STAT_NAMES))
    max_candidates = 0
    if reranked:
        chosen = [events[i] for i in reranked]
        error, lm = _candidate_matrix(chosen, 1), _candidate_matrix(chosen, 2)
        max_candidates = error.shape[1]
        reranker = reranker or fit_reranker(error, lm)
        rows[reranked, COLUMN["reranking.base_correct"]] = top_is_first(error)
        rows[reranked, COLUMN["reranking.correct"]] = top_is_first(reranker(error, lm))
    return LogStats(path, rows, np.array(fingerprints, dtype=np.uint64),
                    np.array(entropy_fingerprints, dtype=np.uint64),
                    [event.get("user") for event in events],
                    [(event.get("user"), event.get("message")) for event in events],
                    max_candidates, reranker if reranked else None)


def _prediction(row: List[float], completions: List[List[str]], target: str) -> None:
    first = completions[0]
    if target in first:
        rank = first.index(target) + 1
        row[COLUMN["prediction.srr"]] = 1 / rank
        row[COLUMN["prediction.hit"]] = 1
        for n in HIT_RANKS:
            row[COLUMN[f"prediction.hit{n}"]] = rank <= n
    for start, suffixes in enumerate(completions):
        if target[start:] in suffixes[:COMPLETION_MAX_RANK]:
            row[COLUMN["completion.characters"]] = len(target) - start
            row[COLUMN["completion.tokens"]] = 1
            break


def fingerprint(hashes: np.ndarray) -> int:
    return int(hashes.sum(dtype=np.uint64)) & _MASK32


# -- lmc's two output shapes ----------------------------------------------------------

def raw_summary(total: np.ndarray, stats: LogStats, mask: Optional[np.ndarray] = None) -> dict:
    """`lmc stats --no-human` for the (selected) events."""
    pick = slice(None) if mask is None else mask
    value = dict(zip(STAT_NAMES, (json_number(v) for v in total)))
    reranking: Dict[str, Any]
    if stats.max_candidates:
        reranking = {"max_candidates": stats.max_candidates,
                     "base_correct": value["reranking.base_correct"],
                     "correct": value["reranking.correct"],
                     "args": {"alpha": float(stats.reranker.alpha),
                              "beta": float(stats.reranker.beta)}}
    else:  # lmc's own spelling of an empty reranking
        reranking = {"max_candidates": 0, "already_correct": 0, "correct": 0, "args": None}
    return {
        "skipped": value["skipped"],
        "users": value["users"], "messages": value["messages"], "tokens": value["tokens"],
        "characters": value["characters"],
        "fingerprint": fingerprint(stats.fingerprints[pick]),
        "prediction": {key: value[f"prediction.{key}"]
                       for key in ("srr", "hit", *(f"hit{n}" for n in HIT_RANKS))},
        "completion": {"characters": value["completion.characters"],
                       "tokens": value["completion.tokens"]},
        "entropy": {"sum": float(total[COLUMN["entropy.sum"]]),
                    "tokens": value["entropy.tokens"],
                    "fingerprint": fingerprint(stats.entropy_fingerprints[pick])},
        "reranking": reranking,
    }


PREDICTION_KEYS = ("srr", "hit", *(f"hit{n}" for n in HIT_RANKS))


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def rates(total: np.ndarray) -> Dict[str, float]:
    """Every rate that lmc's human statistics derive from the sums, under flattened
    keys, for any total: the whole log's, a user's, or a bootstrap resample's."""
    value = dict(zip(STAT_NAMES, (float(v) for v in total)))
    tokens, characters = value["tokens"], value["characters"]
    entropy_tokens = value["entropy.tokens"]
    mean = _ratio(value["entropy.sum"], entropy_tokens)
    result = {
        "messages_per_user": _ratio(value["messages"], value["users"]),
        "tokens_per_user": _ratio(tokens, value["users"]),
        "characters_per_token": _ratio(characters, tokens),
        "skipped": _ratio(value["skipped"], value["skipped"] + tokens),
        **{f"prediction.{'mrr' if key == 'srr' else key}": _ratio(value[f"prediction.{key}"], tokens)
           for key in PREDICTION_KEYS},
        "completion.characters": _ratio(value["completion.characters"], characters),
        "completion.tokens": _ratio(value["completion.tokens"], tokens),
        "entropy.hit": _ratio(entropy_tokens, tokens),
        "entropy.mean": mean,
        "entropy.perplexity": math.exp(mean),
        "entropy.bits_per_token": mean / math.log(2),
        "entropy.bits_per_character": _ratio(value["entropy.sum"] / math.log(2),
                                             value["entropy.characters"]),
        "reranking.accuracy": _ratio(value["reranking.correct"], tokens),
        "reranking.base_accuracy": _ratio(value["reranking.base_correct"], tokens),
    }
    return result


def human_summary(total: np.ndarray, stats: LogStats, mask: Optional[np.ndarray] = None) -> dict:
    """`lmc stats` (humanized), plus perplexity and bits per token and character."""
    raw = raw_summary(total, stats, mask)
    rate = rates(total)
    human: Dict[str, Any] = {
        "fingerprint": f"{raw['fingerprint']:08x}",
        "users": raw["users"],
        **{key: rate[key] for key in ("messages_per_user", "tokens_per_user",
                                      "characters_per_token", "skipped")},
    }
    sections = {
        "prediction": raw["prediction"]["hit"] != 0,
        "completion": raw["completion"]["tokens"] != 0,
        "entropy": raw["entropy"]["tokens"] != 0,
        "reranking": raw["reranking"]["max_candidates"] != 0,
    }
    for section, present in sections.items():
        if present:
            human[section] = {key.split(".", 1)[1]: value for key, value in rate.items()
                              if key.startswith(section + ".")}
    if sections["entropy"]:
        human["entropy"]["fingerprint"] = f"{raw['entropy']['fingerprint']:08x}"
    if sections["reranking"]:
        human["reranking"]["max_candidates"] = raw["reranking"]["max_candidates"]
    return human
