"""LM evaluation results in the shapes their tools print: `lmc stats` (humanized, and raw
as `--no-human`), LM Zoo surprisal figures (of surprisal tables, predictions files and
words), and `lmc diff`-like comparisons.

The figures are the reductions' (evalproto.stats.reductions.Result); this module only
arranges them, with the same keys and nesting as lmc, and writes them as JSON Lines
or text.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from evalproto.base.numerals import json_number, to_json
from evalproto.metrics.lm import (
    COLUMN,
    DATA_RATES,
    PREDICTION_COLUMN,
    PREDICTION_KEYS,
    PREDICTION_RATES,
    LMChallenge,
    LMZoo,
    LMZooPredictions,
)
from evalproto.readers.words import Word
from evalproto.stats.reductions import Result


def raw_summary(result: Result, metric: LMChallenge) -> Dict[str, Any]:
    """`lmc stats --no-human`: the sums, the fingerprints and reranking's fit."""
    value = {name: json_number(total) for name, total in zip(result.stat_names, result.stats)}
    fingerprints = metric.fingerprints(list(result.stats))
    reranking: Dict[str, Any]
    if metric.max_candidates and metric.reranker is not None:
        reranking = {"max_candidates": metric.max_candidates,
                     "base_correct": value["reranking.base_correct"],
                     "correct": value["reranking.correct"],
                     "args": {"alpha": float(metric.reranker.alpha),
                              "beta": float(metric.reranker.beta)}}
    else:  # lmc's own spelling of an empty reranking
        reranking = {"max_candidates": 0, "already_correct": 0, "correct": 0, "args": None}
    return {
        "skipped": value["skipped"],
        "users": value["users"], "messages": value["messages"], "tokens": value["tokens"],
        "characters": value["characters"],
        "fingerprint": fingerprints["fingerprint"],
        "prediction": {key: value[f"prediction.{key}"] for key in PREDICTION_KEYS},
        "completion": {"characters": value["completion.characters"],
                       "tokens": value["completion.tokens"]},
        "entropy": {"sum": float(result.stats[COLUMN["entropy.sum"]]),
                    "tokens": value["entropy.tokens"],
                    "fingerprint": fingerprints["entropy.fingerprint"]},
        "reranking": reranking,
    }


def human_summary(result: Result, metric: LMChallenge) -> Dict[str, Any]:
    """`lmc stats` (humanized), plus perplexity and bits per token and character; the
    sections lmc shows only when the log has them."""
    raw = raw_summary(result, metric)
    rate = {name: estimate.value for name, estimate in result.figures.items()}
    human: Dict[str, Any] = {
        "fingerprint": f"{raw['fingerprint']:08x}",
        "users": raw["users"],
        **{key: rate[key] for key in DATA_RATES},
    }
    for section in shown_sections(raw):
        human[section] = {key.split(".", 1)[1]: value for key, value in rate.items()
                          if key.startswith(section + ".") and key != "entropy.fingerprint"}
    if "entropy" in human:
        human["entropy"]["fingerprint"] = f"{raw['entropy']['fingerprint']:08x}"
    if "reranking" in human:
        human["reranking"]["max_candidates"] = raw["reranking"]["max_candidates"]
    return human


def shown_sections(raw: Dict[str, Any]) -> List[str]:
    """The sections of the human summary that lmc shows: those the log has."""
    present = {"prediction": raw["prediction"]["hit"] != 0,
               "completion": raw["completion"]["tokens"] != 0,
               "entropy": raw["entropy"]["tokens"] != 0,
               "reranking": raw["reranking"]["max_candidates"] != 0}
    return [section for section, shown in present.items() if shown]


def zoo_summary(result: Result) -> Dict[str, Any]:
    figures = {name: estimate.value for name, estimate in result.figures.items()}
    return {"sentences": int(figures["sentences"]), "tokens": int(figures["tokens"]),
            "bits_per_token": figures["bits_per_token"], "perplexity": figures["perplexity"]}


def predictions_summary(result: Result, metric: LMZooPredictions, raw: bool = False
                        ) -> Dict[str, Any]:
    """An LM Zoo predictions file's figures (or, `raw`, its sums, nested by their dotted
    names), and the signature; the share of unknown tokens when they were marked, and
    how many tokens were left out when some could be."""
    if raw:
        sums: Dict[str, Any] = {}
        for name, total in zip(result.stat_names, result.stats):
            section, _, key = name.rpartition(".")
            (sums.setdefault(section, {}) if section else sums)[key] = json_number(total)
        return {**sums, "signature": metric.signature()}
    rate = {name: estimate.value for name, estimate in result.figures.items()}
    record = {**zoo_summary(result),
              "prediction": {name.split(".")[1]: rate[name] for name in PREDICTION_RATES.values()},
              "predictive_entropy": rate["predictive_entropy"],
              "characters_per_token": rate["characters_per_token"]}
    if metric.unknown_marked:
        record["unknown"] = rate["unknown"]
    if metric.skips:
        record["skipped"] = int(rate["skipped"])
    record["signature"] = metric.signature()
    return record


def word_summary(log: str, word: Word, total: Sequence[float], metric: LMZooPredictions
                 ) -> Dict[str, Any]:
    """A word's surprisal (bits): the sum of its tokens' (none if all were left out)."""
    value = {name: float(total[i]) for name, i in PREDICTION_COLUMN.items()}
    record: Dict[str, Any] = {
        "log": log, "sentence": word.sentence, "word": word.index, "text": word.text,
        "tokens": int(value["tokens"]),
        "surprisal": value["bits"] if value["tokens"] else None}
    if metric.unknown_marked:
        record["unknown"] = int(value["unknown"])
    if metric.skips:
        record["skipped"] = int(value["skipped"])
    return record


def summary(result: Result, metric: Any, log: str, raw: bool = False) -> Dict[str, Any]:
    """Everything lm-score reports for one log (or one of its users or sentences): the
    log, the breakdown's key and value, lmc's figures, and the intervals of the model's
    rates that it shows."""
    labels = {} if result.group is None else {result.group_key: result.group}
    if isinstance(metric, LMZooPredictions):
        figures = predictions_summary(result, metric, raw)
    elif isinstance(metric, LMZoo):
        figures = zoo_summary(result)
    else:
        figures = raw_summary(result, metric) if raw else human_summary(result, metric)
    record = {"log": log, **labels, **figures}
    shown = set() if raw else {key for key, _ in flat_items(figures)}
    intervals = {name: {"mean": float(estimate.mean), "ci": float(estimate.ci or 0.0)}
                 for name, estimate in result.figures.items()
                 if estimate.mean is not None and name in shown}
    if intervals:
        record["confidence"] = intervals
    return record


LABELS = ("user", "sentence", "word")
"""What a breakdown's record is of: a user, a sentence, or a word of a sentence."""


def format_json(records: Iterable[Dict[str, Any]]) -> str:
    """JSON Lines with sorted keys, as `lmc stats` writes them; a figure that is not a
    finite number (an overflowing perplexity) is null."""
    return "".join(to_json(record, sort_keys=True) + "\n" for record in records)


def format_text(summaries: Sequence[Dict[str, Any]]) -> str:
    """One block per summary, one `key: value` line per statistic (± its CI)."""
    blocks = []
    for record in summaries:
        labels = [f"{key} {record[key]}" for key in LABELS if key in record]
        lines = [str(record["log"]) + (f" ({', '.join(labels)})" if labels else "")]
        intervals = record.get("confidence", {})
        for key, value in flat_items(record):
            if key in ("log", *LABELS) or key.startswith("confidence."):
                continue
            text = f"{value:.6g}" if isinstance(value, float) else str(value)
            if key in intervals:
                text += f" (μ = {intervals[key]['mean']:.6g} ± {intervals[key]['ci']:.6g})"
            lines.append(f"  {key}: {text}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def comparison_rows(baseline: Optional[Result], other: Optional[Result],
                    skipped: Optional[Tuple[str, str]] = None) -> List[Dict[str, Any]]:
    """lm-compare's rows: each tested rate of the two logs, its change and p-value; and
    a row for a section that could not be compared, with the reason."""
    rows: List[Dict[str, Any]] = []
    if skipped:
        rows.append({"metric": skipped[0], "comparable": False, "reason": skipped[1]})
    for name, estimate in (other.figures.items() if other else ()):
        if estimate.p_value is None:
            continue
        base = baseline.figures[name].value if baseline else float("nan")
        rows.append({"metric": name, "baseline": base, "log": estimate.value,
                     "delta": estimate.value - base, "p_value": estimate.p_value})
    return rows


def format_comparison_text(rows: Sequence[Dict[str, Any]], baseline: str, other: str) -> str:
    """lm-compare's rows as a text table: each rate of both logs, its change and
    p-value, and the rates that could not be compared, with the reason."""
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


def flat_items(tree: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    """(dotted key, value) of every leaf of a nested summary, in order, for text lines."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from flat_items(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value
