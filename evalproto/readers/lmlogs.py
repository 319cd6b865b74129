"""LM Challenge logs as stats rows of the LMChallenge metric (evalproto.metrics.lm).

Every event of a wc, we, ce or wr log becomes one additive row: token and character
counts, next-word-prediction ranks (from `completions[0]`), word completion within
rank 2, cross-entropy (-logp, skipped when logp is null), reranking hits, indicators
that a new user or message starts (lmc counts consecutive changes), and lmc's event
hash (for the fingerprints) in two 16-bit halves. Events marked `"select": false`
(e.g. by `lmc grep`) only count as skipped.

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
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from types import ModuleType
from typing import Annotated, Any, Deque, Iterator, List, Optional, Sequence, Tuple, Union

import msgspec
import numpy as np

from evalproto.base.compiled import compiled, pure_python
from evalproto.base.errors import InputError
from evalproto.base.gcpause import paused_gc
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics.lm import COLUMN, HIT_RANKS, STAT_NAMES, Reranker, split_hashes
from evalproto.readers.text import count_lines, decode_json_line, decoded_text

COMPLETION_MAX_RANK = 2
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_HASHABLE_TYPES = frozenset({str, int, bool, type(None)})


@lru_cache(maxsize=2 ** 16)
def _string_hash(value: str) -> int:
    """The first 8 bytes of a string's MD5; users and targets repeat, so cached."""
    return struct.unpack("<Q", hashlib.md5(value.encode("utf8")).digest()[:8])[0]


def _value_hash(value: Any) -> int:
    """lmc's hash of one field, modulo 2**64: the first 8 bytes of a string's MD5,
    50123 * an integer, 49307 for null."""
    if isinstance(value, str):
        return _string_hash(value)
    if isinstance(value, (bool, int)):
        return (50123 * value) & _MASK64
    if value is None:
        return 49307
    raise ValueError(f"cannot fingerprint a {type(value).__name__}")


def _column_hashes(values: Sequence[Any]) -> np.ndarray:
    """`_value_hash` of every value of one field. String fields are hashed by the
    compiled loop (or through the MD5 cache) and integer fields in an array; in mixed
    fields, which repeat, each distinct value is hashed once. (Only where equal values
    hash alike: 1 == True and both hash as 1, but 1.0 must be an error.)"""
    types = set(map(type, values))
    if types == {str}:
        if not pure_python():
            return np.frombuffer(_compiled().md5_prefixes(list(values)), dtype=np.uint64)
        return np.fromiter(map(_string_hash, values), dtype=np.uint64, count=len(values))
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


Key = Union[str, int, bool, None]
"""A user, message or token id, as lmc hashes them (a float, list or object is not one)."""
Candidate = Tuple[str, Optional[float], Optional[float]]
"""A reranking candidate: its text, its error-model score and its LM score."""


class _Event(msgspec.Struct, gc=False):
    """The fields of an LM Challenge event that its statistics read, with their types:
    msgspec checks them as it decodes, and the error names the field. (Events hold no
    cycles, so the collector need not track them: decoding is about a fifth faster.)"""

    target: str
    user: Key = None
    message: Key = None
    token: Key = None
    # completions[i]: the suffixes predicted after typing i characters; [0] must exist
    completions: Optional[Annotated[List[List[str]], msgspec.Meta(min_length=1)]] = None
    logp: Optional[float] = None  # finite: msgspec refuses numbers beyond a double
    select: bool = True
    results: Optional[Annotated[List[Candidate], msgspec.Meta(min_length=1)]] = None


_DECODER = msgspec.json.Decoder(_Event)
_CHUNK_BYTES = 1 << 18  # a chunk's objects stay in cache while read field by field
_READ_AHEAD = 4


def _line_spans(data: bytes) -> Iterator[Tuple[int, int]]:
    """(start, end) of pieces of about _CHUNK_BYTES that end at line ends."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + _CHUNK_BYTES)
        end = len(data) if end < 0 else end + 1
        yield start, end
        start = end


def _decode_each_line(path: str, chunk: bytes, first_line: int) -> List[_Event]:
    """The slow way through a chunk that failed to decode, to name the line at fault."""
    events = []
    for number, line in enumerate(chunk.split(b"\n"), first_line):
        if not line or line.isspace():
            continue
        try:
            events.append(decode_json_line(path, number, line, _DECODER.decode))
        except msgspec.ValidationError as exc:
            raise InputError(f"{path}: line {number}: not an LM Challenge event (a JSON "
                             f"object with a string 'target' and typed fields): {exc}") from None
    return events


def _completed_at(completions: List[List[str]], target: str, first: int) -> int:
    """How many characters were typed (from `first` on) before the rest of the word was
    among the top two completions, or -1 if it never was."""
    start = first
    for suffixes in completions[first:]:
        if target[start:] in suffixes[:COMPLETION_MAX_RANK]:
            return start
        start += 1
    return -1


def _candidate_matrix(events: Sequence[_Event], column: int) -> np.ndarray:
    """Error (column 1) or LM (column 2) scores, the target's candidates first, padded
    with -inf, as float32 like lmc's jagged matrices."""
    rows = []
    for event in events:
        results, target = event.results or [], event.target
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
    """A log's per-event rows, each event's user and message, and reranking's fit."""

    path: str
    rows: np.ndarray
    users: List[Any]
    messages: List[Tuple[Any, Any]]  # (user, message) per event
    max_candidates: int = 0
    reranker: Optional[Reranker] = None
    reranking: List[Tuple[int, _Event]] = field(default_factory=list)  # events with results


def log_stats(path: str, data: bytes, reranker: Optional[Reranker] = None,
              progress: Progress = QUIET) -> LogStats:
    """Rows for every event of a JSON Lines log; the reranker is fitted on the log
    unless one is given. The log is read in chunks of a few hundred kilobytes, each read
    straight into the columns the statistics need (by the compiled reader, or msgspec)
    and turned into rows at once, so a large log never exists as Python objects. The
    compiled reader works a few chunks ahead, on two threads."""
    phase = progress.start(f"reading {path}", len(data), unit="B")
    rows = np.zeros((count_lines(data), len(STAT_NAMES)))  # an event per line, as a rule

    def chunks() -> Iterator[LogStats]:
        first_line, filled = 1, 0
        spans = list(_line_spans(data))
        read = repeat(None) if pure_python() else _read_ahead(data, spans)
        for (start, end), native in zip(spans, read):
            columns, lines = _chunk_columns(path, data, start, end, first_line, native)
            events = len(columns.select)
            if filled + events <= len(rows):
                part = rows[filled:filled + events]
                filled += events
            else:  # msgspec read more events than lines (two objects on one line)
                part = np.zeros((events, len(STAT_NAMES)))
            yield _chunk_rows(path, columns, part)
            phase.advance(end - start)
            first_line += lines

    stats = _joined(path, chunks(), rows)
    phase.close()
    if not stats.users:
        raise InputError(f"{path}: no events; expected an LM Challenge log (JSON Lines)")
    if stats.reranking:
        indices = [i for i, _ in stats.reranking]
        candidates = [event for _, event in stats.reranking]
        error, lm = _candidate_matrix(candidates, 1), _candidate_matrix(candidates, 2)
        stats.max_candidates = error.shape[1]
        stats.reranker = reranker or fit_reranker(error, lm)
        stats.rows[indices, COLUMN["reranking.base_correct"]] = top_is_first(error)
        stats.rows[indices, COLUMN["reranking.correct"]] = top_is_first(stats.reranker(error, lm))
    return stats


def _joined(path: str, parts: Iterator[LogStats], table: np.ndarray) -> LogStats:
    """The chunks' stats end to end. Their rows are consecutive slices of `table`
    (whose rows past the last event are dropped), unless a chunk did not fit: then
    they are put together. A chunk counts a new user and message at its first
    selected event; that is corrected against the last selected event before it."""
    joined = LogStats(path, table, [], [])
    pieces = []
    previous: Optional[Tuple[Any, Any]] = None  # (user, message) of the last selected event
    with paused_gc():
        for part in parts:
            selected = np.flatnonzero(part.rows[:, COLUMN["tokens"]])
            if len(selected):
                first = selected[0]
                if previous is not None:
                    part.rows[first, COLUMN["users"]] = part.users[first] != previous[0]
                    part.rows[first, COLUMN["messages"]] = part.messages[first] != previous
                previous = part.messages[selected[-1]]
            joined.reranking += [(len(joined.users) + i, event) for i, event in part.reranking]
            joined.users += part.users
            joined.messages += part.messages
            pieces.append(part.rows)
    if all(piece.base is table for piece in pieces):
        joined.rows = table[:len(joined.users)]
    else:
        joined.rows = np.concatenate(pieces)
    return joined


@dataclass
class _Columns:
    """What the rows of a chunk's events are made of: for every event, whether it is
    selected, its user and its (user, message); for each selected event, whether its
    user and its message differ from the previous selected event's (the chunk's first
    always does), its target's length, lmc's event hash, the prediction rank and
    completion start (`prediction_ranks`) and logp (NaN for null)."""

    select: np.ndarray
    users: List[Any]
    messages: List[Tuple[Any, Any]]
    user_changes: np.ndarray
    message_changes: np.ndarray
    lengths: np.ndarray
    hashes: np.ndarray
    ranks: np.ndarray
    starts: np.ndarray
    logps: np.ndarray
    reranking: List[Tuple[int, _Event]] = field(default_factory=list)


def _read_ahead(data: bytes, spans: Sequence[Tuple[int, int]]
                ) -> Iterator[Optional[Tuple[Any, ...]]]:
    """The compiled reader's result for each span of the log, in order: its columns, or
    None where it declines. It releases the GIL while it parses, so two threads read
    up to _READ_AHEAD chunks ahead of the caller."""
    read = _compiled().event_columns
    with ThreadPoolExecutor(2) as threads:
        pending: Deque[Future] = deque()
        for start, end in spans:
            pending.append(threads.submit(read, data, start, end))
            if len(pending) > _READ_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _chunk_columns(path: str, data: bytes, start: int, end: int, first_line: int,
                   native: Optional[Tuple[Any, ...]]) -> Tuple[_Columns, int]:
    """The columns of the chunk data[start:end] of a log, which starts at line
    `first_line`, and its number of lines: the compiled reader's (`native`), or, for a
    chunk it declined (anything but plain events: errors, reranking candidates, unusual
    JSON), msgspec's (under the caller's paused_gc)."""
    if native is not None:
        columns = _native_columns(*native)
        return columns, len(columns.users)  # a line per event
    chunk = data[start:end]
    return _decoded_columns(path, first_line, chunk), chunk.count(b"\n")


def _native_columns(users: List[Any], messages: List[Tuple[Any, Any]], select: bytes,
                    changes: bytes, lengths: bytes, hashes: bytes, ranks: bytes,
                    logps: bytes) -> _Columns:
    """The compiled reader's columns (native/lmlog.cpp, `event_columns`)."""
    pairs = np.frombuffer(ranks, dtype=np.int64).reshape(-1, 2)
    changed = np.frombuffer(changes, dtype=np.bool_).reshape(-1, 2)
    return _Columns(np.frombuffer(select, dtype=np.bool_), users, messages,
                    changed[:, 0], changed[:, 1],
                    np.frombuffer(lengths, dtype=np.int64).astype(np.float64),
                    np.frombuffer(hashes, dtype=np.uint64), pairs[:, 0], pairs[:, 1],
                    np.frombuffer(logps, dtype=np.float64))


def _decoded_columns(path: str, first_line: int, chunk: bytes) -> _Columns:
    """A chunk's columns from the events msgspec decodes (the reference code). Its
    bytes must be UTF-8 throughout, as lmc reads them: msgspec passes over a field the
    events do not have without looking at its bytes."""
    if not chunk.isascii():
        decoded_text(path, chunk, first_line - 1)  # raises at a byte that is not UTF-8
    try:
        events = _DECODER.decode_lines(chunk)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        events = _decode_each_line(path, chunk, first_line)
    select = np.array([event.select for event in events], dtype=bool)
    all_users = [event.user for event in events]
    all_messages = list(zip(all_users, [event.message for event in events]))
    picked = events if select.all() else [event for event in events if event.select]
    users = [event.user for event in picked]
    messages = [event.message for event in picked]
    targets = [event.target for event in picked]
    user_changes = _changes(users)
    ranks, starts = prediction_ranks([event.completions for event in picked], targets)
    chosen = np.flatnonzero(select)
    return _Columns(
        select, all_users, all_messages, user_changes,
        user_changes | _changes(messages),
        np.array([len(target) for target in targets], dtype=np.float64),
        event_hashes(users, messages, [event.token for event in picked], targets),
        ranks, starts, _logps([event.logp for event in picked]),
        [(int(i), events[i]) for i in chosen if events[i].results is not None])


def _chunk_rows(path: str, columns: _Columns, rows: np.ndarray) -> LogStats:
    """The stats rows of a chunk's events, written into `rows` (zeros, one per event)."""
    chosen = np.flatnonzero(columns.select)
    rows[:, COLUMN["skipped"]] = ~columns.select
    rows[chosen, COLUMN["tokens"]] = 1
    rows[chosen, COLUMN["users"]] = columns.user_changes
    rows[chosen, COLUMN["messages"]] = columns.message_changes
    lengths = columns.lengths
    rows[chosen, COLUMN["characters"]] = lengths
    low, high = split_hashes(columns.hashes)
    rows[chosen, COLUMN["fingerprint.low"]] = low
    rows[chosen, COLUMN["fingerprint.high"]] = high
    _add_predictions(rows, chosen, columns.ranks, columns.starts, lengths)
    logps = columns.logps
    scored = ~np.isnan(logps)
    entropy_rows = chosen[scored]
    rows[entropy_rows, COLUMN["entropy.sum"]] = -logps[scored]
    rows[entropy_rows, COLUMN["entropy.tokens"]] = 1
    rows[entropy_rows, COLUMN["entropy.characters"]] = lengths[scored]
    rows[entropy_rows, COLUMN["entropy.fingerprint.low"]] = low[scored]
    rows[entropy_rows, COLUMN["entropy.fingerprint.high"]] = high[scored]
    return LogStats(path, rows, columns.users, columns.messages, reranking=columns.reranking)


def _add_predictions(rows: np.ndarray, chosen: np.ndarray, ranks: np.ndarray,
                     starts: np.ndarray, lengths: np.ndarray) -> None:
    """Next-word prediction ranks (from completions[0]) and word completion."""
    hit = ranks > 0
    rows[chosen[hit], COLUMN["prediction.srr"]] = 1 / ranks[hit]
    rows[chosen, COLUMN["prediction.hit"]] = hit
    for n in HIT_RANKS:
        rows[chosen, COLUMN[f"prediction.hit{n}"]] = hit & (ranks <= n)
    completed = starts >= 0
    rows[chosen[completed], COLUMN["completion.characters"]] = (lengths - starts)[completed]
    rows[chosen, COLUMN["completion.tokens"]] = completed


def prediction_ranks(completions: List[Any], targets: List[str]
                     ) -> Tuple[np.ndarray, np.ndarray]:
    """Per event, the target's rank in completions[0] (0 if absent) and where it was
    completed (`_completed_at`, 0 for a rank within the top two, -1 if never)."""
    if not pure_python():
        pairs = np.frombuffer(_compiled().prediction_ranks(completions, targets),
                              dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]
    ranks = [words[0].index(target) + 1 if words is not None and target in words[0] else 0
             for words, target in zip(completions, targets)]
    # a rank within the top two is a completion before any character is typed
    starts = [0 if 0 < rank <= COMPLETION_MAX_RANK
              else -1 if words is None else _completed_at(words, target, 1)
              for words, target, rank in zip(completions, targets, ranks)]
    return np.array(ranks, dtype=np.int64), np.array(starts, dtype=np.int64)


def _compiled() -> ModuleType:
    """The compiled loops (native/lmlog.cpp)."""
    return compiled("evalproto.readers._lmlog")


def _changes(keys: List[Any]) -> np.ndarray:
    """Whether each key differs from the one before; lmc counts users and messages so."""
    return np.fromiter(map(operator.ne, keys, [object(), *keys[:-1]]), dtype=bool,
                       count=len(keys))


def _logps(values: List[Optional[float]]) -> np.ndarray:
    """Each event's logp, NaN where it is null (not scored)."""
    return np.array([math.nan if value is None else value for value in values],
                    dtype=np.float64)
