"""Reports on LM evaluation tables: LM Challenge logs and LM Zoo surprisal tables.

Both become a table of additive rows with a resampling unit per row (a message, or a
sentence) and a way to summarise any sum of rows, so breakdowns, bootstrap intervals
and paired tests are the same reductions as for MT metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.readers import lmlogs
from evalproto.readers import surprisals
from evalproto.base.errors import InputError
from evalproto.base.gcpause import paused_gc
from evalproto.readers.text import read_bytes
from evalproto.base.numerals import to_json
from evalproto.stats.resampling import (
    approximate_randomization,
    checked_total,
    bootstrap_counts,
    estimate_ci,
    paired_bootstrap,
)
from evalproto.stats.reductions import rows_by_key

Summarize = Callable[[np.ndarray, Optional[np.ndarray]], Dict[str, Any]]


@dataclass
class LMTable:
    """One log's rows, what to resample, how to break it down and how to summarise."""

    path: str
    rows: np.ndarray
    units: List[Any]  # the resampling unit of each row: its message or sentence
    breakdowns: Dict[str, List[Any]]  # e.g. {"user": [user of each row]}
    stat_names: Sequence[str]
    summarize: Summarize  # (total, rows picked or None) -> the reported dictionary
    rates: Callable[[np.ndarray], Dict[str, float]]  # total -> every rate, flattened
    data_fingerprint: Optional[str] = None


def load_table(path: str, reranker: Optional[lmlogs.Reranker] = None, raw: bool = False,
               skip_first_token: bool = False) -> LMTable:
    """An LM Challenge log or an LM Zoo surprisal table, told apart by the header."""
    data = read_bytes(path)
    if surprisals.is_surprisal_table(data):
        table = surprisals.parse_surprisals(path, data, skip_first_token)
        sentences = table.sentence_ids
        return LMTable(
            path, table.rows, sentences, {"sentence": sentences}, surprisals.STAT_NAMES,
            lambda total, picked: surprisals.surprisal_summary(total, len(run_starts(
                sentences if picked is None else _take(sentences, picked)))),
            surprisals.surprisal_rates)
    stats = lmlogs.log_stats(path, data, reranker)
    if not (stats.rows[:, lmlogs.COLUMN["tokens"]] == 1).any():
        raise InputError(f"{path}: every event is unselected; there is nothing to score")
    summary = lmlogs.raw_summary if raw else lmlogs.human_summary
    return LMTable(path, stats.rows, stats.messages, {"user": stats.users}, lmlogs.STAT_NAMES,
                   lambda total, picked: summary(total, stats, picked), lmlogs.rates,
                   f"{lmlogs.fingerprint(stats.fingerprints):08x}")


def _take(values: Sequence[Any], picked: np.ndarray) -> List[Any]:
    return [values[i] for i in picked.tolist()]


def run_starts(keys: Sequence[Any]) -> List[int]:
    """Where each run of equal consecutive keys (a message, a sentence) starts."""
    return [i for i, key in enumerate(keys) if i == 0 or key != keys[i - 1]]


def unit_sums(rows: np.ndarray, units: Sequence[Any]) -> np.ndarray:
    """Rows summed over runs of equal consecutive units (messages, sentences)."""
    return np.add.reduceat(rows, run_starts(units), axis=0)


def summaries(table: LMTable, by: Optional[str], confidence_n: int,
              seed: Optional[int]) -> List[Dict[str, Any]]:
    """The table's summary, then one per value of the breakdown; each with its CIs."""
    parts: List[Tuple[Dict[str, Any], Optional[np.ndarray]]] = [({}, None)]
    if by is not None:
        if by not in table.breakdowns:
            raise InputError(f"{table.path}: cannot break down by {by}; this kind of table "
                             f"has {', '.join(table.breakdowns)}")
        parts += [({by: value}, picked)
                  for value, picked in rows_by_key(table.breakdowns[by]).items()]
    results = []
    for label, picked in parts:
        rows = table.rows if picked is None else table.rows[picked]
        total = checked_total(rows, table.stat_names, table.path)
        summary = {"log": table.path, **label, **table.summarize(total, picked)}
        if confidence_n:
            units = table.units if picked is None else _take(table.units, picked)
            summary["confidence"] = confidence(unit_sums(rows, units), table.rates,
                                               reported_rates(summary, table), confidence_n,
                                               seed)
        results.append(summary)
    return results


DATA_RATES = frozenset({"messages_per_user", "tokens_per_user", "characters_per_token",
                        "skipped"})
"""Rates that describe the text rather than the model: no intervals or tests for them."""


def log_summaries(path: str, reranker: Optional[lmlogs.Reranker], raw: bool,
                  skip_first_token: bool, by: Optional[str], confidence_n: int,
                  seed: Optional[int]) -> List[Dict[str, Any]]:
    """Everything lm-score reports for one log or surprisal table. The collector stays
    paused until the table is freed: its one pass over a 1M-event table's objects took
    0.3 s, and found nothing to collect."""
    with paused_gc():
        return summaries(load_table(path, reranker, raw, skip_first_token), by, confidence_n,
                         seed)


def reported_rates(summary: Dict[str, Any], table: LMTable) -> List[str]:
    """The flattened keys of the model's rates that a summary shows."""
    known = table.rates(table.rows.sum(axis=0))
    return [key for key, value in _flatten(summary)
            if key in known and key not in DATA_RATES and isinstance(value, float)]


def confidence(unit_rows: np.ndarray, rates: Callable, keys: Sequence[str], samples: int,
               seed: Optional[int]) -> Dict[str, Dict[str, float]]:
    """Bootstrap mean and 95% half-width of each rate, resampling whole units."""
    values: Dict[str, List[float]] = {key: [] for key in keys}
    for counts in bootstrap_counts(len(unit_rows), samples, seed):
        for total in counts @ unit_rows:
            rate = rates(total)
            for key in keys:
                values[key].append(rate[key])
    return {key: dict(zip(("mean", "ci"), estimate_ci(np.array(series))))
            for key, series in values.items()}


def compare(baseline: LMTable, other: LMTable, test: str, samples: int,
            seed: Optional[int]) -> List[Dict[str, Any]]:
    """A paired test per rate, resampling (or swapping) whole units of both tables."""
    if baseline.data_fingerprint != other.data_fingerprint:
        raise InputError(
            f"{baseline.path} and {other.path} are not logs of the same data: their "
            f"fingerprints are {baseline.data_fingerprint} and {other.data_fingerprint} "
            f"(over user, message, token and target of the selected events)")
    if baseline.units != other.units:
        raise InputError(f"{baseline.path} and {other.path} hold the same events in a "
                         f"different order; sort both by (user, message, token)")
    base_units = unit_sums(baseline.rows, baseline.units)
    other_units = unit_sums(other.rows, other.units)
    base_summary = baseline.summarize(baseline.rows.sum(axis=0), None)
    other_keys = reported_rates(other.summarize(other.rows.sum(axis=0), None), other)
    base_keys = reported_rates(base_summary, baseline)
    keys = [key for key in base_keys if key in other_keys]
    if not keys:
        def sections(rates: Sequence[str]) -> str:
            return ", ".join(dict.fromkeys(key.split(".")[0] for key in rates)) or "no rate"
        raise InputError(
            f"{baseline.path} and {other.path} have no rate in common to compare: the first "
            f"reports {sections(base_keys)}, the second {sections(other_keys)} (logs of "
            f"different games?)")
    run = paired_bootstrap if test == "bs" else approximate_randomization
    rows = []
    base_entropy = base_summary.get("entropy", {}).get("fingerprint")
    other_entropy = other.summarize(other.rows.sum(axis=0), None).get("entropy", {}).get(
        "fingerprint")
    if base_entropy != other_entropy:  # lmc's stricter rule: the same tokens must be scored
        keys = [key for key in keys if not key.startswith("entropy.")]
        rows.append({"metric": "entropy", "comparable": False,
                     "reason": f"the models scored different tokens (entropy fingerprints "
                               f"{base_entropy} and {other_entropy})"})
    for key in keys:
        def score_many(totals: np.ndarray, key: str = key) -> np.ndarray:
            return np.array([baseline.rates(total)[key] for total in totals])
        base_value = baseline.rates(baseline.rows.sum(axis=0))[key]
        other_value = other.rates(other.rows.sum(axis=0))[key]
        result = run(base_units, other_units, score_many, samples, seed, inclusive=True)
        rows.append({"metric": key, "baseline": base_value, "log": other_value,
                     "delta": other_value - base_value, "p_value": result.p_value})
    return rows


def format_json(records: Iterable[Dict[str, Any]]) -> str:
    """JSON Lines with sorted keys, as `lmc stats` writes them; a figure that is not a
    finite number (an overflowing perplexity) is null."""
    return "".join(to_json(record, sort_keys=True) + "\n" for record in records)


def format_text(summaries: Sequence[Dict[str, Any]]) -> str:
    """One block per summary, one `key: value` line per statistic (± its CI)."""
    blocks = []
    for summary in summaries:
        labels = [f"{key} {summary[key]}" for key in ("user", "sentence") if key in summary]
        lines = [summary["log"] + (f" ({', '.join(labels)})" if labels else "")]
        intervals = summary.get("confidence", {})
        for key, value in _flatten(summary):
            if key in ("log", "user", "sentence") or key.startswith("confidence."):
                continue
            text = f"{value:.6g}" if isinstance(value, float) else str(value)
            if key in intervals:
                text += f" (μ = {intervals[key]['mean']:.6g} ± {intervals[key]['ci']:.6g})"
            lines.append(f"  {key}: {text}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def format_comparison_text(rows: Sequence[Dict[str, Any]], baseline: str, other: str) -> str:
    lines = [f"baseline: {baseline}", f"log:      {other}", ""]
    width = max(len(row["metric"]) for row in rows) if rows else 0
    for row in rows:
        if not row.get("comparable", True):
            lines.append(f"{row['metric'].ljust(width)}  not compared: {row['reason']}")
            continue
        marker = "*" if row["p_value"] <= 0.05 else ""
        lines.append(f"{row['metric'].ljust(width)}  {row['baseline']:.6g} -> {row['log']:.6g}"
                     f"  ({row['delta']:+.6g}, p = {row['p_value']:.4f}){marker}")
    return "\n".join(lines) + "\n"


def _flatten(tree: Dict[str, Any], prefix: str = "") -> Iterable[Tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value
