"""LM evaluation logs: `lmc stats`' figures for LM Challenge logs, LM Zoo surprisal
tables and predictions files, and paired tests between two logs of the same data (`lmc
diff`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike, fspath
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from evalproto.api.files import check_cluster_inputs
from evalproto.api.lmzoo import ZooOptions, ZooTable, paired_table, zoo_table
from evalproto.api.scoring import count_of, resamples_of
from evalproto.base.errors import InputError, UsageProblem
from evalproto.base.gcpause import paused_gc
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics.lm import LMChallenge, LMZoo, Reranker
from evalproto.readers import lmlogs, predictions, surprisals
from evalproto.readers.text import check_inputs, read_bytes
from evalproto.reports import lm as lm_reports
from evalproto.sources import dask as cluster
from evalproto.stats.reductions import Analysis, Result, analyse
from evalproto.stats.resampling import DEFAULT_SEED
from evalproto.stats.table import StatsTable


@dataclass
class LMScore:
    """lm-score's figures for one LM Challenge log or LM Zoo surprisal table: `summary`
    holds what `lmc stats` prints (its keys and nesting), `breakdown` one such summary
    per user or sentence when asked for, `results` the reductions behind them."""

    log: str
    summary: Dict[str, Any]
    breakdown: List[Dict[str, Any]] = field(default_factory=list)
    results: List[Result] = field(default_factory=list)

    def to_dict(self) -> List[Dict[str, Any]]:
        """The summary, then each breakdown row (lm-score's JSON Lines)."""
        return [self.summary, *self.breakdown]


def lm_table(path: str, reranker: Optional[Reranker] = None,
             skip_first_token: bool = False, progress: Progress = QUIET) -> StatsTable:
    """An LM Challenge log or an LM Zoo surprisal table, told apart by the header, as a
    table: one row per event (units: messages, groups: users) or per token (units and
    groups: sentences). (LM Zoo predictions files are read by `zoo_table`.)"""
    data = read_bytes(path)
    predictions.check_not_hdf5(path, data)
    if surprisals.is_surprisal_table(data):
        table = surprisals.parse_surprisals(path, data, skip_first_token)
        return StatsTable(path, LMZoo(), {path: table.rows}, units=table.sentence_ids,
                          groups=[[sentence] for sentence in table.sentence_ids],
                          group_key="sentence")
    stats = lmlogs.log_stats(path, data, reranker, progress)
    if not stats.rows[:, 0].any():  # the tokens column: every event unselected
        raise InputError(f"{path}: every event is unselected; there is nothing to score")
    metric = LMChallenge(stats.max_candidates, stats.reranker)
    return StatsTable(path, metric, {path: stats.rows}, units=stats.messages,
                      groups=[[user] for user in stats.users], group_key="user")


@dataclass(frozen=True)
class LMOptions:
    """What lm-score computes for each log: `by` ("user" or "sentence") adds each
    one's figures; `resamples` bootstrap resamples over messages (sentences);
    `reranker` fixed (alpha, beta) instead of fitted ones; `raw` the sums (lmc's
    --no-human); `skip_first_token` leaves out each LM Zoo sentence's first token; `zoo`
    says how to read LM Zoo predictions files (and `by` may be "word" for them)."""

    by: Optional[str] = None
    resamples: int = 0
    seed: Optional[int] = DEFAULT_SEED
    reranker: Optional[Reranker] = None
    raw: bool = False
    skip_first_token: bool = False
    zoo: ZooOptions = ZooOptions()


def lm_summaries(path: str, options: LMOptions = LMOptions(),
                 progress: Progress = QUIET) -> LMScore:
    """Everything lm-score reports for one log or table. The collector stays paused
    until the table is freed: its one pass over a 1M-event table's objects took 0.3 s,
    and found nothing to collect."""
    with paused_gc():
        zoo = _zoo_table(path, options, progress)
        table = zoo.table if zoo else lm_table(path, options.reranker, options.skip_first_token,
                                               progress)
        if options.by is not None and options.by != table.group_key:
            raise InputError(f"{path}: cannot break down by {options.by}; this kind of table "
                             f"has {table.group_key}")
        by_group = options.by is not None and options.by != "word"
        results = analyse([table], Analysis(resamples=options.resamples, seed=options.seed,
                                            groups=by_group), progress)
        records = [lm_reports.summary(result, table.metric, path, options.raw)
                   for result in results]
        if zoo and options.by == "word":
            records += zoo.word_records()
        return LMScore(path, records[0], records[1:], results)


def _zoo_table(path: str, options: LMOptions, progress: Progress) -> Optional[ZooTable]:
    """An LM Zoo predictions file's table (recognised by its content), or None for
    another kind of log, for which the model's other outputs cannot be given."""
    if predictions.is_hdf5(path):
        by = options.by if options.by in ("sentence", "word") else None
        return zoo_table(path, options.zoo, options.skip_first_token, by, progress)
    if options.zoo.files:
        raise UsageProblem(f"{path}: not an LM Zoo predictions file (HDF5); "
                           f"{', '.join(options.zoo.files)} apply only to those")
    return None


def lm_score(logs: Union[str, PathLike, Sequence[Union[str, PathLike]]], *,
             by: Optional[str] = None, confidence: Union[bool, int] = False,
             seed: Optional[int] = DEFAULT_SEED, reranker: Optional[Tuple[float, float]] = None,
             raw: bool = False, skip_first_token: bool = False,
             log_base: str = "e", candidates: int = 100, spec: Optional[str] = None,
             unkify: Optional[str] = None, skip_unk: bool = False,
             tokenize: Optional[str] = None, text: Optional[str] = None,
             scheduler: Optional[str] = None, progress: Progress = QUIET
             ) -> Union[LMScore, List[LMScore]]:
    """lmc stats' figures for LM Challenge logs (any game) and LM Zoo surprisal tables
    and predictions files: an LMScore for one path, a list of them for a list of paths,
    with the options of LMOptions and ZooOptions (`confidence=True` is 1000 resamples,
    or give a number; `reranker` is lmc's (alpha, beta); `by="word"` needs `text`);
    with `scheduler`, each log is read on a Dask worker. `progress` is told of reading
    and resampling (on a cluster, the workers say nothing)."""
    one = isinstance(logs, (str, PathLike))
    if isinstance(logs, (str, PathLike)):
        paths = [fspath(logs)]
    elif isinstance(logs, bytes) or not isinstance(logs, Sequence):
        raise TypeError(f"logs must be a path or a list of paths, got {type(logs).__name__}")
    else:
        paths = [fspath(path) for path in logs]
    if by not in (None, "user", "sentence", "word"):
        raise ValueError(f"by is {by!r}; expected 'user', 'sentence', 'word' or None")
    check_inputs(paths, ())
    zoo = ZooOptions(log_base, candidates, spec, unkify, skip_unk, tokenize, text)
    if zoo.files and len(paths) > 1:
        raise UsageProblem(f"{', '.join(zoo.files)} describe one model's predictions: give "
                           f"one predictions file with them, not {len(paths)} logs")
    options = LMOptions(by, resamples_of(confidence), seed, reranker_of(reranker), raw,
                        skip_first_token, zoo)
    if scheduler:
        check_cluster_inputs(1, paths)
        with cluster.connect(scheduler) as client:
            scores = cluster.run_each(client, lm_summaries, [(path, options) for path in paths])
    else:
        scores = [lm_summaries(path, options, progress) for path in paths]
    return scores[0] if one else scores


def reranker_of(reranker: Optional[Tuple[float, float]]) -> Optional[Reranker]:
    """lmc's reranker from an (alpha, beta) pair of numbers, or a TypeError."""
    if reranker is None:
        return None
    if isinstance(reranker, (str, bytes)) or not isinstance(reranker, Sequence) or len(
            reranker) != 2 or not all(isinstance(value, (int, float)) and not isinstance(
                value, bool) for value in reranker):
        raise TypeError(f"reranker must be an (alpha, beta) pair of numbers, got {reranker!r}")
    return Reranker(float(reranker[0]), float(reranker[1]))


@dataclass
class LMComparison:
    """lm-compare's rows: each model rate of two logs, its change and p-value."""

    baseline: str
    log: str
    rows: List[Dict[str, Any]]

    def to_dict(self) -> List[Dict[str, Any]]:
        """The rows as plain data (lm-compare's JSON Lines)."""
        return [dict(row) for row in self.rows]


def lm_compare(baseline: str, other: str, test: str = "bs", samples: int = 1000,
               seed: Optional[int] = DEFAULT_SEED,
               reranker: Optional[Tuple[float, float]] = None,
               progress: Progress = QUIET, *, log_base: str = "e",
               candidates: int = 100) -> LMComparison:
    """A paired test of every model rate between two logs of the same data (`lmc diff`
    with p-values), resampling (or swapping) whole messages. Logs of other data, or of
    the same events in another order, are refused; entropy is left out when the two
    models scored different tokens; logs that share no rate are refused. Two LM Zoo
    predictions files (read with `log_base` and `candidates`) must hold the same tokens;
    their sentences are resampled."""
    if test not in ("bs", "ar"):
        raise ValueError(f"test is {test!r}; expected 'bs' (paired bootstrap) or 'ar' "
                         f"(approximate randomization)")
    samples = count_of(samples, "samples")
    fixed = reranker_of(reranker)
    analysis = Analysis(paired=test, paired_n=samples, seed=seed, inclusive=True)
    with paused_gc():
        kinds = [predictions.is_hdf5(path) for path in (baseline, other)]
        if any(kinds):
            if not all(kinds):
                raise InputError(f"{baseline if kinds[0] else other} is an LM Zoo predictions "
                                 f"file and the other is not; lm-compare compares two LM "
                                 f"Challenge logs, or two predictions files")
            zoo = ZooOptions(log_base, candidates)
            pair = paired_table(*(zoo_table(path, zoo, progress=progress)
                                  for path in (baseline, other)))
            base, compared = analyse([pair], analysis, progress)
            return LMComparison(baseline, other, lm_reports.comparison_rows(base, compared))
        tables = [lm_table(path, fixed, progress=progress) for path in (baseline, other)]
        metrics = [table.metric for table in tables if isinstance(table.metric, LMChallenge)]
        if len(metrics) != len(tables):
            raise InputError("lm-compare compares two LM Challenge logs, or two LM Zoo "
                             "predictions files (not surprisal tables)")
        totals = [next(iter(table.rows.values())).sum(axis=0) for table in tables]
        prints = [metric.fingerprints(total) for metric, total in zip(metrics, totals)]
        if prints[0]["fingerprint"] != prints[1]["fingerprint"]:
            raise InputError(
                f"{baseline} and {other} are not logs of the same data: their fingerprints "
                f"are {prints[0]['fingerprint']:08x} and {prints[1]['fingerprint']:08x} "
                f"(over user, message, token and target of the selected events)")
        if tables[0].units != tables[1].units:
            raise InputError(f"{baseline} and {other} hold the same events in a different "
                             f"order; sort both by (user, message, token)")
        shown = [_model_rates(metric, total) for metric, total in zip(metrics, totals)]
        tested = [name for name in metrics[0].tested if name in shown[0] and name in shown[1]]
        if not tested:
            raise InputError(
                f"{baseline} and {other} have no rate in common to compare: the first "
                f"reports {_sections(shown[0])}, the second {_sections(shown[1])} (logs of "
                f"different games?)")
        skipped = None
        if prints[0]["entropy.fingerprint"] != prints[1]["entropy.fingerprint"]:
            tested = [name for name in tested if not name.startswith("entropy.")]
            skipped = ("entropy", f"the models scored different tokens (entropy fingerprints "
                                  f"{prints[0]['entropy.fingerprint']:08x} and "
                                  f"{prints[1]['entropy.fingerprint']:08x})")
        metric = _Tested(metrics[0], tested)
        table = StatsTable(baseline, metric, {"baseline": tables[0].rows[baseline],
                                              "log": tables[1].rows[other]},
                           units=tables[0].units)
        if not tested:
            return LMComparison(baseline, other, lm_reports.comparison_rows(None, None, skipped))
        base, compared = analyse([table], analysis, progress)
        return LMComparison(baseline, other, lm_reports.comparison_rows(base, compared, skipped))


class _Tested:
    """An LM metric whose tests are limited to some of its rates."""

    def __init__(self, metric: LMChallenge, tested: List[str]) -> None:
        self._metric, self.tested = metric, tested
        self.stat_names, self.higher_is_better = metric.stat_names, metric.higher_is_better
        self.resample_dtype = metric.resample_dtype

    def signature(self) -> str:
        return self._metric.signature()

    def figures(self, totals: np.ndarray) -> Dict[str, np.ndarray]:
        return self._metric.figures(totals)

    def score_many(self, vectors: np.ndarray) -> np.ndarray:
        return self._metric.score_many(vectors)


def _model_rates(metric: LMChallenge, total: np.ndarray) -> List[str]:
    """The model's rates that lmc's summary of this total shows."""
    raw = lm_reports.raw_summary(Result("", "", 0.0, "", 0, total, metric.stat_names, True),
                                 metric)
    sections = lm_reports.shown_sections(raw)
    return [name for name in metric.tested if name.split(".")[0] in sections]


def _sections(rates: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(name.split(".")[0] for name in rates)) or "no rate"
