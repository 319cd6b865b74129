"""LM Zoo predictions files (`get_predictions.hdf5`) as stats rows of the
LMZooPredictions metric (evalproto.metrics.lm), one per token.

The file holds, for every sentence i (numbered from 0), `/sentence/<i>/predictions`, a
tokens × vocabulary matrix whose row j is the log-probability distribution of token j
given the tokens before it, and `/sentence/<i>/tokens`, the ids of the tokens that came;
`/vocabulary` holds the vocabulary's strings as UTF-8 bytes. With a vocabulary of 50,000
such files are large, so a sentence is read a block of rows at a time (h5py reads only
the slice asked for), never the whole file; every row is checked to be a distribution
before it counts. h5py is an optional extra (`evalproto[lmzoo]`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, List, Tuple

import numpy as np

from evalproto.base.errors import InputError, SetupError
from evalproto.base.numerals import is_whole_number
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics.lm import HIT_RANKS, PREDICTION_COLUMN, PREDICTION_STAT_NAMES
from evalproto.readers.text import STDIN

SIGNATURE = b"\x89HDF\r\n\x1a\n"
"""The first bytes of an HDF5 file (at 0, or after a user block of 512, 1024, ... bytes)."""
NAMES = (".hdf5", ".h5", ".hdf", ".he5")
LOG_BASES = {"2": 2.0, "e": math.e, "10": 10.0}
TOLERANCE = 1e-3
"""How far from 1 the probabilities of a row may sum (float32 softmax rounding)."""
BLOCK_VALUES = 1 << 20
"""Log-probabilities read and scored at once: 8 MB as float64, a few such arrays live."""
EXPECTED = ("expected LM Zoo's get_predictions.hdf5 output (/sentence/<i>/predictions, "
            "/sentence/<i>/tokens, /vocabulary)")
C = PREDICTION_COLUMN


def is_hdf5(path: str) -> bool:
    """Whether a file (not stdin) carries HDF5's signature where HDF5 looks for it."""
    if path == STDIN:
        return False
    try:
        with open(path, "rb") as stream:
            size, offset = os.fstat(stream.fileno()).st_size, 0
            while offset + len(SIGNATURE) <= size:
                stream.seek(offset)
                if stream.read(len(SIGNATURE)) == SIGNATURE:
                    return True
                offset = 512 if offset == 0 else offset * 2
    except (OSError, ValueError):  # the reader of logs says what is wrong with it
        return False
    return False


def check_not_hdf5(path: str, data: bytes) -> None:
    """Refuse a file named as HDF5 that is not one, and HDF5 data that did not come from
    a file on disk (stdin, gzip), which h5py cannot read."""
    if data.startswith(SIGNATURE):
        raise InputError(f"{path}: HDF5 data (LM Zoo predictions?) can only be read from an "
                         f"uncompressed file on disk, by its name")
    if path.lower().endswith(NAMES):
        raise InputError(f"{path}: not an HDF5 file (it lacks HDF5's signature); {EXPECTED}")


@dataclass
class Predictions:
    """A predictions file's rows (one per token), each row's token id, the row at which
    each sentence starts (and one past the last), and the vocabulary."""

    path: str
    rows: np.ndarray
    token_ids: np.ndarray
    starts: np.ndarray
    vocabulary: List[str]

    @property
    def sentences(self) -> int:
        return len(self.starts) - 1

    def units(self) -> List[str]:
        """Each row's sentence, by its name in the file (the number i of /sentence/<i>)."""
        counts = np.diff(self.starts).tolist()
        return [str(i) for i, count in enumerate(counts) for _ in range(count)]

    def tokens(self, sentence: int) -> List[str]:
        """The strings of a sentence's tokens."""
        ids = self.token_ids[self.starts[sentence]:self.starts[sentence + 1]]
        return [self.vocabulary[i] for i in ids.tolist()]

    def mark_unknown(self, mask: np.ndarray) -> None:
        """Mark the tokens of `mask` as unknown to the model."""
        self.rows[:, C["unknown"]] = mask

    def leave_out(self, mask: np.ndarray) -> None:
        """Leave the tokens of `mask` out of every figure: their rows keep only whether
        they open a sentence and are unknown, and count as skipped."""
        columns = np.array([C["sentences"], C["unknown"]])
        kept = self.rows[np.ix_(mask, columns)]
        self.rows[mask] = 0
        self.rows[np.ix_(mask, columns)] = kept
        self.rows[mask, C["skipped"]] = 1


def read_predictions(path: str, log_base: str = "e", candidates: int = 100,
                     skip_first_token: bool = False, progress: Progress = QUIET) -> Predictions:
    """Every token of a predictions file as a row; the log-probabilities are in base
    `log_base` ("2", "e" or "10"); ranks beyond `candidates` are misses."""
    h5py = _h5py(path)
    try:
        with h5py.File(path, "r") as file:
            vocabulary = _vocabulary(h5py, path, file)
            sentences = _sentences(h5py, path, file, len(vocabulary))
            starts = np.concatenate(([0], np.cumsum([len(ids) for _, ids, _ in sentences])))
            rows = np.zeros((int(starts[-1]), len(PREDICTION_STAT_NAMES)))
            token_ids = np.concatenate([ids for _, ids, _ in sentences])
            lengths = np.array([len(item) for item in vocabulary], dtype=np.float64)
            scorer = _Scorer(path, LOG_BASES[log_base], candidates, vocabulary)
            phase = progress.start(f"reading {path}", len(rows))
            step = max(1, BLOCK_VALUES // len(vocabulary))  # rows per read
            for (name, ids, matrix), start in zip(sentences, starts.tolist()):
                for first in range(0, len(ids), step):
                    block = np.asarray(matrix[first:first + step], dtype=np.float64)
                    part = rows[start + first:start + first + len(block)]
                    scorer.fill(part, block, ids[first:first + len(block)], name, first)
                    phase.advance(len(block))
            phase.close()
    except OSError as exc:  # h5py's errors: not HDF5 after all, truncated, unreadable
        raise InputError(f"{path}: cannot read it as HDF5: {exc}") from None
    opening = np.zeros(len(rows), dtype=bool)  # each sentence's first token
    opening[starts[:-1][np.diff(starts) > 0]] = True
    rows[opening, C["sentences"]] = 1
    rows[:, C["characters"]] = lengths[token_ids]
    predictions = Predictions(path, rows, token_ids, starts, vocabulary)
    if skip_first_token:
        predictions.leave_out(opening)
    if not len(rows):
        raise InputError(f"{path}: the predictions file has no tokens to score")
    return predictions


def _h5py(path: str) -> ModuleType:
    try:
        import h5py
    except ImportError:
        raise SetupError(f"{path}: reading LM Zoo predictions (HDF5) needs h5py: "
                         f"pip install 'evalproto[lmzoo]'") from None
    return h5py


def _vocabulary(h5py: ModuleType, path: str, file: Any) -> List[str]:
    """The vocabulary's strings: UTF-8 bytes (fixed-length or variable) or strings."""
    found = file.get("vocabulary")
    if not isinstance(found, h5py.Dataset):
        raise InputError(f"{path}: no /vocabulary dataset; {EXPECTED}")
    if found.ndim != 1 or found.dtype.kind not in "SUO":
        raise InputError(f"{path}: /vocabulary is not a list of strings (a {found.ndim}-D "
                         f"array of {found.dtype})")
    vocabulary = []
    for number, item in enumerate(found[()].tolist()):
        try:
            vocabulary.append(item.decode("utf-8") if isinstance(item, bytes) else str(item))
        except UnicodeDecodeError:
            raise InputError(f"{path}: /vocabulary entry {number} is not UTF-8: "
                             f"{item!r}") from None
    if not vocabulary:
        raise InputError(f"{path}: /vocabulary is empty")
    return vocabulary


def _sentences(h5py: ModuleType, path: str, file: Any, size: int
               ) -> List[Tuple[str, np.ndarray, Any]]:
    """(name, token ids, predictions dataset) of every sentence, in order, checked
    against each other and the vocabulary; the matrices are not read yet."""
    group = file.get("sentence")
    if not isinstance(group, h5py.Group):
        raise InputError(f"{path}: no /sentence group; {EXPECTED}")
    names = list(group.keys())
    for name in names:
        if not (is_whole_number(name) and name == str(int(name))):
            raise InputError(f"{path}: /sentence/{name}: not a sentence number; {EXPECTED}")
    numbers = sorted(int(name) for name in names)
    if not numbers:
        raise InputError(f"{path}: /sentence holds no sentences")
    missing = next((i for i, number in enumerate(numbers) if i != number), None)
    if missing is not None:
        raise InputError(f"{path}: there is no /sentence/{missing}, but there is a "
                         f"/sentence/{numbers[-1]}; sentences are numbered from 0 without gaps")
    return [_sentence(h5py, path, group[str(number)], str(number), size) for number in numbers]


def _sentence(h5py: ModuleType, path: str, group: Any, name: str, size: int
              ) -> Tuple[str, np.ndarray, Any]:
    where = f"{path}: sentence {name}"
    matrix, tokens = (_dataset(h5py, group, key, f"{where}: no /sentence/{name}/{key} dataset")
                      for key in ("predictions", "tokens"))
    if tokens.ndim != 1 or tokens.dtype.kind not in "iu":
        raise InputError(f"{where}: /sentence/{name}/tokens is not a list of integer token "
                         f"ids (a {tokens.ndim}-D array of {tokens.dtype})")
    ids = np.asarray(tokens[()], dtype=np.int64)
    if matrix.ndim != 2 or matrix.dtype.kind != "f":
        raise InputError(f"{where}: the predictions are not a matrix of log-probabilities "
                         f"(a {matrix.ndim}-D array of {matrix.dtype})")
    if matrix.shape[1] != size:
        raise InputError(f"{where}: the predictions matrix is {matrix.shape[1]} wide, but "
                         f"/vocabulary has {size} entries")
    if matrix.shape[0] != len(ids):
        raise InputError(f"{where}: the predictions matrix has {matrix.shape[0]} rows for "
                         f"{len(ids)} tokens")
    beyond = np.flatnonzero((ids < 0) | (ids >= size))
    if len(beyond):
        raise InputError(f"{where}, token {beyond[0]}: id {ids[beyond[0]]} is beyond the "
                         f"vocabulary (ids 0 to {size - 1})")
    return name, ids, matrix


def _dataset(h5py: ModuleType, group: Any, key: str, missing: str) -> Any:
    found = group.get(key) if isinstance(group, h5py.Group) else None
    if not isinstance(found, h5py.Dataset):
        raise InputError(f"{missing}; {EXPECTED}")
    return found


class _Scorer:
    """Turns blocks of log-probability rows into stats rows, refusing rows that are not
    distributions. Ranks count strictly higher log-probabilities (ties rank alike, as
    the token's own place among equals is arbitrary)."""

    def __init__(self, path: str, base: float, candidates: int, vocabulary: List[str]) -> None:
        self.path, self.base, self.candidates = path, base, candidates
        self.scale = math.log(base)  # log-probabilities in base `base` to nats
        self.bits = 1 / math.log(2) if base == math.e else math.log2(base)  # ... to bits
        self.vocabulary = vocabulary

    def fill(self, rows: np.ndarray, block: np.ndarray, ids: np.ndarray, name: str,
             first: int) -> None:
        """Write the stats of the tokens `ids` (from token `first` of sentence `name`),
        whose distributions are `block`, into `rows`."""
        actual = block[np.arange(len(ids)), ids]
        probabilities = np.exp(block if self.base == math.e else block * self.scale)
        totals = probabilities.sum(axis=1)
        self._check(block, totals, actual, ids, name, first)
        ranks = 1 + (block > actual[:, None]).sum(axis=1)
        with np.errstate(invalid="ignore"):  # 0 * -inf, for a probability of 0
            terms = np.where(probabilities > 0, probabilities * block, 0.0)
        rows[:, C["bits"]] = -actual * self.bits
        rows[:, C["tokens"]] = 1
        rows[:, C["predictive_entropy"]] = -terms.sum(axis=1) * self.bits
        hit = ranks <= self.candidates
        rows[:, C["prediction.srr"]] = np.where(hit, 1 / ranks, 0.0)
        rows[:, C["prediction.hit"]] = hit
        for n in HIT_RANKS:
            rows[:, C[f"prediction.hit{n}"]] = hit & (ranks <= n)

    def _check(self, block: np.ndarray, totals: np.ndarray, actual: np.ndarray,
               ids: np.ndarray, name: str, first: int) -> None:
        where = f"{self.path}: sentence {name}, token"
        bad = np.flatnonzero(~(np.abs(totals - 1) <= TOLERANCE))
        if len(bad):
            row = bad[0]
            if np.isnan(block[row]).any():
                raise InputError(f"{where} {first + row}: the log-probabilities hold NaN")
            base = "e" if self.base == math.e else f"{self.base:g}"
            raise InputError(
                f"{where} {first + row}: not a log-probability distribution: in base "
                f"{base} its probabilities sum to {totals[row]:.6g}, not 1 (within "
                f"{TOLERANCE:g}); is the base right (`log_base` 2, e or 10)?")
        zero = np.flatnonzero(np.isneginf(actual))
        if len(zero):
            row = zero[0]
            raise InputError(f"{where} {first + row}: the token that came "
                             f"({self.vocabulary[ids[row]]!r}) has probability 0; its "
                             f"surprisal is infinite")
