"""LM evaluation as metrics with several outputs: LM Challenge's rates (`lmc stats`,
lmchallenge 5.2) and LM Zoo's surprisal figures.

Their rows come from logs, one per event or token (evalproto.readers.lmlogs and
.surprisals), not from (refs, hyp) pairs, but they are metrics as the reductions see
them: stat names, and every figure of any sum of rows (`figures`), so that a corpus, a
user, a bootstrap resample or a paired test are the same reductions as for BLEU. Only
the model's rates are `tested` (intervals, tests); the rest describe the data.

lmc's fingerprints are sums of 32-bit event hashes modulo 2^32; each hash is kept in
two 16-bit columns, whose sums stay exact in float64 for up to 2^37 events, so the
fingerprint of any set of events is a figure like any other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.version import __version__

HIT_RANKS = (1, 3, 10, 20)
PREDICTION_KEYS = ("srr", "hit", *(f"hit{n}" for n in HIT_RANKS))
FINGERPRINTS = ("fingerprint", "entropy.fingerprint")
STAT_NAMES = (
    "tokens", "characters", "skipped", "users", "messages",
    *(f"prediction.{key}" for key in PREDICTION_KEYS),
    "completion.characters", "completion.tokens",
    "entropy.sum", "entropy.tokens", "entropy.characters",
    "reranking.base_correct", "reranking.correct",
    *(f"{name}.{half}" for name in FINGERPRINTS for half in ("low", "high")),
)
COLUMN = {name: i for i, name in enumerate(STAT_NAMES)}
DATA_RATES = ("messages_per_user", "tokens_per_user", "characters_per_token", "skipped")
"""Rates that describe the text rather than the model: no intervals or tests for them."""
_HALF = 1 << 16
_MASK32 = 0xFFFFFFFF


def split_hashes(hashes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """32-bit hashes as their low and high 16 bits, columns whose sums stay exact."""
    hashes = hashes.astype(np.uint64)
    return (hashes & np.uint64(_HALF - 1)).astype(np.float64), \
        (hashes >> np.uint64(16)).astype(np.float64)


def joined_hash(low: float, high: float) -> int:
    """The sum of the hashes, modulo 2^32, from the sums of their two halves."""
    return (int(high) * _HALF + int(low)) & _MASK32


@dataclass
class Reranker:
    """lmc's InterpolationRerankingModel with its two parameters."""

    alpha: float
    beta: float

    def __call__(self, error: np.ndarray, lm: np.ndarray) -> np.ndarray:
        return (1 - self.alpha) * error + np.maximum(self.alpha * lm, self.beta)


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _exp(value: float) -> float:
    """e ** value, infinite where it overflows a double (a perplexity can)."""
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf


def _power_of_two(value: float) -> float:
    """2 ** value, infinite where it overflows a double."""
    try:
        return 2 ** value
    except OverflowError:
        return math.inf


class LMChallenge:
    """The statistics of an LM Challenge log (any game: wc, we, ce, wr), as `lmc stats`
    computes them from its sums. One instance per log: reranking's fitted parameters
    and candidate count belong to the log."""

    name = "lmc"
    higher_is_better = True
    stat_names = STAT_NAMES
    resample_dtype = np.float64

    def __init__(self, max_candidates: int = 0, reranker: Optional[Reranker] = None) -> None:
        self.max_candidates, self.reranker = max_candidates, reranker

    @property
    def tested(self) -> List[str]:
        """The model's rates: every rate but the data's and the fingerprints."""
        return [name for name in self.rates(np.zeros(len(STAT_NAMES)))
                if name not in DATA_RATES]

    def signature(self) -> str:
        return f"lmc:5.2|version:evalproto-{__version__}"

    def rates(self, total: np.ndarray) -> Dict[str, float]:
        """Every rate that lmc's human statistics derive from the sums, under flattened
        keys, for any total: the whole log's, a user's, or a bootstrap resample's."""
        value = dict(zip(STAT_NAMES, (float(v) for v in total)))
        tokens, characters = value["tokens"], value["characters"]
        entropy_tokens = value["entropy.tokens"]
        mean = _ratio(value["entropy.sum"], entropy_tokens)
        return {
            "messages_per_user": _ratio(value["messages"], value["users"]),
            "tokens_per_user": _ratio(tokens, value["users"]),
            "characters_per_token": _ratio(characters, tokens),
            "skipped": _ratio(value["skipped"], value["skipped"] + tokens),
            **{f"prediction.{'mrr' if key == 'srr' else key}":
               _ratio(value[f"prediction.{key}"], tokens) for key in PREDICTION_KEYS},
            "completion.characters": _ratio(value["completion.characters"], characters),
            "completion.tokens": _ratio(value["completion.tokens"], tokens),
            "entropy.hit": _ratio(entropy_tokens, tokens),
            "entropy.mean": mean,
            "entropy.perplexity": _exp(mean),
            "entropy.bits_per_token": mean / math.log(2),
            "entropy.bits_per_character": _ratio(value["entropy.sum"] / math.log(2),
                                                 value["entropy.characters"]),
            "reranking.accuracy": _ratio(value["reranking.correct"], tokens),
            "reranking.base_accuracy": _ratio(value["reranking.base_correct"], tokens),
        }

    def fingerprints(self, total: Sequence[float]) -> Dict[str, int]:
        """The data's and the scored tokens' fingerprints of the events summed."""
        return {name: joined_hash(total[COLUMN[f"{name}.low"]], total[COLUMN[f"{name}.high"]])
                for name in FINGERPRINTS}

    def figures(self, totals: np.ndarray) -> Dict[str, np.ndarray]:
        """Every rate and both fingerprints, for each row of summed statistics."""
        per_total = [{**self.rates(total), **self.fingerprints(total)} for total in totals]
        return {name: np.array([values[name] for values in per_total], dtype=np.float64)
                for name in per_total[0]} if per_total else {}

    def score_many(self, totals: np.ndarray) -> np.ndarray:
        return self.figures(totals)["entropy.bits_per_character"]


class LMZoo:
    """The figures of an LM Zoo `get_surprisals` table: surprisal in bits per token and
    perplexity (2^bits), over tokens and whole sentences."""

    name = "lmzoo"
    higher_is_better = False
    stat_names: Tuple[str, ...] = ("bits", "tokens", "sentences")
    resample_dtype = np.float64
    tested = ["bits_per_token", "perplexity"]

    def signature(self) -> str:
        return f"lmzoo|version:evalproto-{__version__}"

    def figures(self, totals: np.ndarray) -> Dict[str, np.ndarray]:
        totals = np.asarray(totals, dtype=np.float64)
        bits, tokens = totals[:, 0], totals[:, 1]
        per_token = [_ratio(float(b), float(t)) for b, t in zip(bits, tokens)]
        return {"sentences": totals[:, 2], "tokens": tokens,
                "bits_per_token": np.array(per_token),
                "perplexity": np.array([_power_of_two(value) for value in per_token])}

    def score_many(self, totals: np.ndarray) -> np.ndarray:
        return self.figures(totals)["bits_per_token"]


PREDICTION_STAT_NAMES = (
    *LMZoo.stat_names, "characters", *(f"prediction.{key}" for key in PREDICTION_KEYS),
    "predictive_entropy", "unknown", "skipped",
)
"""A token of an LM Zoo predictions file: its surprisal in bits, 1, 1 if it opens a
sentence (LMZoo's three), its vocabulary string's length, lmc's prediction columns of its
rank, the entropy of its predictive distribution in bits, 1 if it is unknown, and 1 if it
is left out (then every column but `sentences` and `unknown` is 0)."""
PREDICTION_COLUMN = {name: i for i, name in enumerate(PREDICTION_STAT_NAMES)}
PREDICTION_RATES = {f"prediction.{key}": f"prediction.{'mrr' if key == 'srr' else key}"
                    for key in PREDICTION_KEYS}
"""Each prediction column's rate (per token), under lmc's name."""


class LMZooPredictions(LMZoo):
    """The figures of an LM Zoo predictions file (`get_predictions.hdf5`): LMZoo's
    surprisal figures of the actual tokens; lmc's `prediction` rates of their ranks, as a
    `wc` log holding `candidates` predictions per token records them; the mean entropy of
    the predictive distributions (bits); characters per token; and, when unknown tokens
    were marked, their share among all tokens. `signed` holds what else the signature
    says (the model's spec, what was left out)."""

    name = "lmzoo-predictions"
    stat_names = PREDICTION_STAT_NAMES
    tested = [*LMZoo.tested, *PREDICTION_RATES.values(), "predictive_entropy"]

    def __init__(self, log_base: str = "e", candidates: int = 100,
                 signed: Sequence[Tuple[str, str]] = (), unknown_marked: bool = False,
                 skips: bool = False) -> None:
        self.log_base, self.candidates = log_base, candidates
        self.signed, self.unknown_marked, self.skips = tuple(signed), unknown_marked, skips

    def signature(self) -> str:
        fields = [("base", self.log_base), ("candidates", str(self.candidates)), *self.signed]
        return "|".join(["lmzoo-predictions", *(f"{key}:{value}" for key, value in fields),
                         f"version:evalproto-{__version__}"])

    def figures(self, totals: np.ndarray) -> Dict[str, np.ndarray]:
        totals = np.asarray(totals, dtype=np.float64)
        column = {name: totals[:, i] for i, name in enumerate(PREDICTION_STAT_NAMES)}
        tokens = column["tokens"]
        return {
            **super().figures(totals),
            **{rate: _ratios(column[name], tokens) for name, rate in PREDICTION_RATES.items()},
            "predictive_entropy": _ratios(column["predictive_entropy"], tokens),
            "characters_per_token": _ratios(column["characters"], tokens),
            "unknown": _ratios(column["unknown"], tokens + column["skipped"]),
            "skipped": column["skipped"],
        }


def _ratios(numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """numerator / denominator, element by element; 0 where the denominator is (lmc's
    rule for a rate of nothing)."""
    return np.divide(numerators, denominators, out=np.zeros_like(numerators),
                     where=denominators != 0)
