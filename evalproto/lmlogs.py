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
import operator
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import msgspec
import numpy as np

from evalproto.errors import InputError
from evalproto.protocol import json_number

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


_MASK64 = 0xFFFFFFFFFFFFFFFF
_HASHABLE_TYPES = frozenset({str, int, bool, type(None)})


def _value_hash(value: Any) -> int:
    """lmc's hash of one field, modulo 2**64: the first 8 bytes of a string's MD5,
    50123 * an integer, 49307 for null."""
    if isinstance(value, str):
        return struct.unpack("<Q", hashlib.md5(value.encode("utf8")).digest()[:8])[0]
    if isinstance(value, (bool, int)):
        return (50123 * value) & _MASK64
    if value is None:
        return 49307
    raise ValueError(f"cannot fingerprint a {type(value).__name__}")


def _column_hashes(values: Sequence[Any]) -> np.ndarray:
    """`_value_hash` of every value of one field. Integer fields are hashed in an array;
    other fields repeat, so each distinct value is hashed once. (Only where equal values
    hash alike: 1 == True and both hash as 1, but 1.0 must be an error.)"""
    types = set(map(type, values))
    if types <= {int, bool}:
        try:
            return np.array(values, dtype=np.int64).astype(np.uint64) * np.uint64(50123)
        except OverflowError:
            pass
    if types <= _HASHABLE_TYPES:
        distinct = list(dict.fromkeys(values))
        index = {value: i for i, value in enumerate(distinct)}
        hashes = np.array([_value_hash(value) for value in distinct], dtype=np.uint64)
        return hashes[np.array([index[value] for value in values], dtype=np.intp)]
    return np.array([_value_hash(value) for value in values], dtype=np.uint64)


def event_hashes(*columns: Sequence[Any]) -> np.ndarray:
    """lmc's stable hash of (user, message, token, target) per event, for fingerprints:
    h = h * 48677 + field, over the fields, modulo 2**32. Computed modulo 2**64 in
    uint64 arrays (which wrap), whose low 32 bits are the same."""
    combined = np.zeros(len(columns[0]), dtype=np.uint64)
    for column in columns:
        combined = combined * np.uint64(48677) + _column_hashes(column)
    return combined & np.uint64(_MASK32)


class _Event(msgspec.Struct):
    """The fields of an LM Challenge event that its statistics read."""

    target: str
    user: Any = None
    message: Any = None
    token: Any = None
    completions: Any = None
    logp: Any = None
    select: Any = True
    results: Any = None


_DECODER = msgspec.json.Decoder(_Event)
_CHUNK_BYTES = 1 << 22


@dataclass
class LogEvents:
    """A log's events as columns, holding only what the statistics need."""

    users: List[Any] = field(default_factory=list)
    messages: List[Any] = field(default_factory=list)
    tokens: List[Any] = field(default_factory=list)
    targets: List[str] = field(default_factory=list)
    skipped: List[bool] = field(default_factory=list)  # "select": false
    ranks: List[int] = field(default_factory=list)  # of the target in completions[0]; 0: absent
    completed_at: List[int] = field(default_factory=list)  # characters typed; -1: never
    logps: List[Any] = field(default_factory=list)
    reranking: List[Tuple[int, _Event]] = field(default_factory=list)  # events with results

    def extend(self, events: List[_Event]) -> None:
        """Add a chunk's events, a field at a time."""
        offset = len(self.targets)
        targets = [event.target for event in events]
        completions = [event.completions for event in events]
        self.users += [event.user for event in events]
        self.messages += [event.message for event in events]
        self.tokens += [event.token for event in events]
        self.targets += targets
        self.skipped += [not event.select for event in events]
        self.ranks += [words[0].index(target) + 1 if words is not None and target in words[0]
                       else 0 for words, target in zip(completions, targets)]
        self.completed_at += [-1 if words is None else _completed_at(words, target)
                              for words, target in zip(completions, targets)]
        self.logps += [event.logp for event in events]
        self.reranking += [(offset + i, event) for i, event in enumerate(events)
                           if event.results is not None]


def parse_log(path: str, data: bytes) -> LogEvents:
    """The events of a JSON Lines log, decoded a few megabytes at a time straight into
    the fields the statistics read (msgspec skips the rest), then let go."""
    log = LogEvents()
    first_line = 1
    for chunk in _line_chunks(data):
        try:
            events = _DECODER.decode_lines(chunk)
        except msgspec.DecodeError:
            events = _decode_each_line(path, chunk, first_line)
        log.extend(events)
        first_line += chunk.count(b"\n")
    if not log.targets:
        raise InputError(f"{path}: no events; expected an LM Challenge log (JSON Lines)")
    return log


def _line_chunks(data: bytes) -> Iterator[bytes]:
    """Pieces of about _CHUNK_BYTES that end at line ends."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + _CHUNK_BYTES)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def _decode_each_line(path: str, chunk: bytes, first_line: int) -> List[_Event]:
    """The slow way through a chunk that failed to decode, to name the line at fault."""
    events = []
    for number, line in enumerate(chunk.split(b"\n"), first_line):
        if not line or line.isspace():
            continue
        try:
            events.append(_DECODER.decode(line))
        except msgspec.ValidationError as exc:
            raise InputError(f"{path}: line {number}: expected an LM Challenge event, a JSON "
                             f"object with a string 'target' ({exc})") from None
        except msgspec.DecodeError as exc:
            raise InputError(f"{path}: line {number}: not JSON: {exc}") from None
    return events


def _completed_at(completions: List[List[str]], target: str) -> int:
    """How many characters were typed before the rest of the word was among the top
    two completions, or -1 if it never was."""
    for start, suffixes in enumerate(completions):
        if target[start:] in suffixes[:COMPLETION_MAX_RANK]:
            return start
    return -1


@dataclass
class Reranker:
    """lmc's InterpolationRerankingModel with its two parameters."""

    alpha: float
    beta: float

    def __call__(self, error: np.ndarray, lm: np.ndarray) -> np.ndarray:
        return (1 - self.alpha) * error + np.maximum(self.alpha * lm, self.beta)


def _candidate_matrix(events: Sequence[_Event], column: int) -> np.ndarray:
    """Error (column 1) or LM (column 2) scores, the target's candidates first, padded
    with -inf, as float32 like lmc's jagged matrices."""
    rows = []
    for event in events:
        results, target = event.results, event.target
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


def log_stats(path: str, events: LogEvents, reranker: Optional[Reranker] = None) -> LogStats:
    """Rows for every event; the reranker is fitted on the log unless one is given."""
    rows = np.zeros((len(events.targets), len(STAT_NAMES)))
    skipped = np.array(events.skipped, dtype=bool)
    chosen = np.flatnonzero(~skipped)
    pick = (lambda column: [column[i] for i in chosen]) if skipped.any() else (lambda column: column)
    users, messages, targets = pick(events.users), pick(events.messages), pick(events.targets)
    rows[:, COLUMN["skipped"]] = skipped
    rows[chosen, COLUMN["tokens"]] = 1
    user_changes = _changes(users)
    rows[chosen, COLUMN["users"]] = user_changes
    rows[chosen, COLUMN["messages"]] = user_changes | _changes(messages)
    lengths = np.array([len(target) for target in targets], dtype=np.float64)
    rows[chosen, COLUMN["characters"]] = lengths
    fingerprints = np.zeros(len(rows), dtype=np.uint64)
    fingerprints[chosen] = event_hashes(users, messages, pick(events.tokens), targets)
    ranks = np.array(events.ranks)[chosen]
    hit = ranks > 0
    rows[chosen[hit], COLUMN["prediction.srr"]] = 1 / ranks[hit]
    rows[chosen, COLUMN["prediction.hit"]] = hit
    for n in HIT_RANKS:
        rows[chosen, COLUMN[f"prediction.hit{n}"]] = hit & (ranks <= n)
    starts = np.array(events.completed_at)[chosen]
    completed = starts >= 0
    rows[chosen[completed], COLUMN["completion.characters"]] = (lengths - starts)[completed]
    rows[chosen, COLUMN["completion.tokens"]] = completed
    logps = _logps(path, pick(events.logps))
    scored = ~np.isnan(logps)
    entropy_rows = chosen[scored]
    rows[entropy_rows, COLUMN["entropy.sum"]] = -logps[scored]
    rows[entropy_rows, COLUMN["entropy.tokens"]] = 1
    rows[entropy_rows, COLUMN["entropy.characters"]] = lengths[scored]
    entropy_fingerprints = np.zeros(len(rows), dtype=np.uint64)
    entropy_fingerprints[entropy_rows] = fingerprints[entropy_rows]
    reranked = [(i, event) for i, event in events.reranking if not skipped[i]]
    max_candidates = 0
    if reranked:
        indices = [i for i, _ in reranked]
        candidates = [event for _, event in reranked]
        error, lm = _candidate_matrix(candidates, 1), _candidate_matrix(candidates, 2)
        max_candidates = error.shape[1]
        reranker = reranker or fit_reranker(error, lm)
        rows[indices, COLUMN["reranking.base_correct"]] = top_is_first(error)
        rows[indices, COLUMN["reranking.correct"]] = top_is_first(reranker(error, lm))
    return LogStats(path, rows, fingerprints, entropy_fingerprints, list(events.users),
                    list(zip(events.users, events.messages)), max_candidates,
                    reranker if reranked else None)


def _changes(keys: List[Any]) -> np.ndarray:
    """Whether each key differs from the one before; lmc counts users and messages so."""
    return np.fromiter(map(operator.ne, keys, [object(), *keys[:-1]]), dtype=bool,
                       count=len(keys))


def _logps(path: str, values: List[Any]) -> np.ndarray:
    """Each event's logp, NaN where it is null (not scored)."""
    try:
        return np.array([math.nan if value is None else value for value in values],
                        dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(value for value in values
                   if value is not None and not isinstance(value, (int, float)))
        raise InputError(f"{path}: expected every 'logp' to be a number or null, "
                         f"found {bad!r}") from None


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
