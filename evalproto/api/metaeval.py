"""Meta-evaluation: how well metrics agree with human judgements, and whether one agrees
significantly better than another, as Google's mt-metrics-eval measures it (the WMT
Metrics shared task), on score files, on the sentence scores of evalproto's own
metrics, and on Open-Assistant's rankings of replies.

    >>> import evalproto
    >>> human = evalproto.read_score_file("tests/data/mqm21/en-de.mqm.seg.score")
    >>> chrf = evalproto.read_score_file("tests/data/mqm21/en-de.chrf.seg.score")
    >>> evalproto.meta_evaluate(human, {"chrF": chrf}, "kendall", "item")["chrF"].value
    0.149245711143282
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from evalproto.api.scoring import Metric, MetricLike, given_metrics
from evalproto.base.errors import InputError, UsageProblem
from evalproto.readers.metascores import Scores, Tables, align, read_score_file, scores_of
from evalproto.readers.rankings import (
    RANK,
    Replies,
    check_message_scores,
    read_message_scores,
    read_oasst_replies,
    reply_tables,
)
from evalproto.readers.text import Corpus, read_corpus
from evalproto.reports.metaeval import MetaEvaluation, MetricAgreement
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.stats import metaeval
from evalproto.stats.metaeval import DEFAULT_EARLY_STOP, EarlyStop, Measure
from evalproto.stats.resampling import DEFAULT_SEED

ScoresLike = Union[Scores, Mapping[str, Sequence[Optional[float]]]]
"""Scores by system, each system's item by item (None: missing): read_score_file's, or a
mapping."""

DATA_FORMATS = ("mt-metrics-eval", "oasst")
"""meta_eval_files' inputs: mt-metrics-eval's score files, or an Open-Assistant export
and scorers' {"message_id", "score"} files."""

_SUFFIXES = (".seg.score", ".sys.score", ".score", ".jsonl", ".json", ".txt")


def meta_evaluate(human: Union[ScoresLike, Replies],
                  metrics: Mapping[str, Union[ScoresLike, Mapping[str, float]]],
                  statistic: Optional[str] = None, average_by: Optional[str] = None, *,
                  epsilon: float = 0.0, threshold: float = 25.0, sample_rate: float = 1.0,
                  replace_nans_with_zeros: bool = False, perm_both: int = 0,
                  seed: Optional[int] = DEFAULT_SEED, block_size: int = 1000,
                  early_min: float = 0.02, early_max: float = 0.5, pval: float = 0.05
                  ) -> MetaEvaluation:
    """Each metric's agreement with the human scores, best first, as mt-metrics-eval's
    CompareMetrics computes it.

    `human` holds scores by system, item by item (None: missing), from read_score_file
    or a mapping; `metrics` maps each metric's name to its scores of the same systems
    and items. Or `human` is read_oasst_replies' judged replies, and each metric maps
    message ids to scores.

    `statistic` is one of META_STATISTICS (default: pearson; pairwise-accuracy for
    Open-Assistant ranks), `average_by` none, sys or item (default: none; item for
    ranks). `epsilon` is the tie threshold of tau23 and acc23, `threshold` WMT's for
    kendall-like, `sample_rate` the share of pairs that tie calibration (acc23-opt,
    tau23-opt) samples. `perm_both` > 0 runs the PERM-BOTH test of every pair with that
    many resamples, from numpy's legacy stream seeded with `seed` (early stopping by
    `block_size`, `early_min`, `early_max`), and ranks the metrics in clusters at `pval`.
    """
    replies = isinstance(human, Replies)
    if isinstance(human, Replies):
        tables, name = _reply_tables(human, metrics), human.path
        statistic, average_by = _ranking_defaults(human, statistic, average_by)
    else:
        human_scores = _scores("human", human)
        tables = align(human_scores, {metric: _scores(metric, scores)
                                      for metric, scores in _metrics(metrics).items()})
        name = human_scores.source
    how = Measure(statistic or "pearson", average_by or "none", epsilon, threshold, sample_rate,
                  replace_nans_with_zeros)
    evaluation = evaluate_tables(tables, name, how, perm_both, seed,
                                 EarlyStop(block_size, early_min, early_max), pval)
    evaluation.replies = replies
    return evaluation


def _metrics(metrics: Any) -> Dict[str, Any]:
    if not isinstance(metrics, Mapping) or not metrics:
        raise TypeError("metrics must be a non-empty mapping of metric names to their scores")
    return {str(name): scores for name, scores in metrics.items()}


def _scores(name: str, scores: Any) -> Scores:
    return scores if isinstance(scores, Scores) else scores_of(name, scores)


def _reply_tables(replies: Replies, metrics: Any) -> Tables:
    scorers = {}
    for name, scores in _metrics(metrics).items():
        if not isinstance(scores, Mapping):
            raise TypeError(f"{name}: the scores of Open-Assistant replies are a mapping of "
                            f"message ids to numbers")
        scorers[name] = check_message_scores(name, scores, replies)
    return reply_tables(replies, scorers)


def _ranking_defaults(replies: Replies, statistic: Optional[str], average_by: Optional[str]
                      ) -> Tuple[str, str]:
    """The statistic and averaging for replies, checked: a rank compares siblings only
    (average by item), and pce compares systems, which replies are not."""
    ranks = replies.judgement == RANK
    statistic = statistic or ("pairwise-accuracy" if ranks else "pearson")
    average_by = average_by or ("item" if ranks else "none")
    if statistic == "pce":
        raise UsageProblem("pce compares systems over segments; Open-Assistant's replies are "
                           "compared with their siblings: choose another statistic")
    if average_by == "sys" or (ranks and average_by != "item"):
        raise UsageProblem(f"Open-Assistant's {'ranks order siblings' if ranks else 'replies'}"
                           f": `average_by` must be item{'' if ranks else ' or none'}, not "
                           f"{average_by}")
    return statistic, average_by


def evaluate_tables(tables: Tables, human: str, how: Measure, perm_both: int = 0,
                    seed: Optional[int] = DEFAULT_SEED, early_stop: EarlyStop = DEFAULT_EARLY_STOP,
                    pval: float = 0.05) -> MetaEvaluation:
    """meta_evaluate on tables already aligned."""
    if perm_both < 0:
        raise UsageProblem("`perm_both` is a number of resamples, >= 0")
    if not 0 <= pval <= 1:
        raise UsageProblem(f"`pval` must be a p-value in [0, 1], not {pval}")
    if perm_both and len(tables.metrics) < 2:
        raise UsageProblem("`perm_both` tests pairs of metrics: give two metrics or more")
    comparison = metaeval.compare_metrics(tables.human, tables.metrics, how, perm_both,
                                          early_stop, seed, pval)
    results = []
    for position, (metric, value) in enumerate(zip(comparison.names, comparison.values)):
        result = MetricAgreement(metric, how.statistic, how.average_by, value.value,
                                 value.epsilon)
        if comparison.p_values is not None and comparison.ranks and comparison.rank_ranges:
            result.p_values = {other: float(comparison.p_values[position, column])
                               for column, other in enumerate(comparison.names)
                               if other != metric}
            result.rank, result.cluster = (comparison.rank_ranges[position],
                                           comparison.ranks[position])
        results.append(result)
    judged = int(np.count_nonzero(~np.isnan(tables.human)))
    return MetaEvaluation(results, human, len(tables.systems), tables.items, judged,
                          resamples=perm_both, seed=seed if perm_both else None, level=pval)


def williams_test(human: ScoresLike, metric1: ScoresLike, metric2: ScoresLike,
                  statistic: str = "pearson", average_by: str = "none",
                  one_sided: bool = True) -> Tuple[float, float, float]:
    """Williams' test of two metrics' correlations with the human scores
    (mt-metrics-eval's WilliamsSigDiff): (p-value, metric 1's value, metric 2's). The
    one-sided p-value is the same whichever metric is the better."""
    tables = align(_scores("human", human), {"metric 1": _scores("metric 1", metric1),
                                             "metric 2": _scores("metric 2", metric2)})
    return metaeval.williams(tables.human, tables.metrics["metric 1"],
                             tables.metrics["metric 2"], Measure(statistic, average_by),
                             one_sided)


def metric_name(path: str) -> str:
    """A metric's name from its file: the file name without its directory and its
    suffix (.seg.score, .sys.score, .jsonl, ...)."""
    name = os.path.basename(path)
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name


def system_name(path: str) -> str:
    """A system's name from its output file: the file name without extension."""
    return os.path.splitext(os.path.basename(path))[0] or os.path.basename(path)


def sentence_scores(metrics: Sequence[MetricLike], corpus: Corpus,
                    names: Optional[Sequence[str]] = None, *, jobs: int = 1,
                    timeout: Optional[float] = DEFAULT_TIMEOUT) -> Dict[str, Scores]:
    """Each metric's sentence scores (Metric.sentence_scores: BLEU as sacrebleu's
    sentence BLEU, ...) of each system of a corpus, by the metric's label; the systems
    named by `names` (by default, their files' names without extension)."""
    paths = list(corpus.systems)
    names = list(names) if names is not None else [system_name(path) for path in paths]
    found: Dict[str, Scores] = {}
    for metric in given_metrics(list(metrics)):
        with ExitStack() as stack:
            scorer = metric if isinstance(metric, Metric) else stack.enter_context(
                Metric(metric, jobs, timeout))
            found[scorer.label] = Scores(scorer.label, {
                name: [float(score) for score in scorer.sentence_scores(
                    corpus.systems[path], corpus.refs)]
                for name, path in zip(names, paths)})
    return found


def _system_names(hyp_paths: Sequence[str], names: Optional[Sequence[str]]) -> List[str]:
    if not hyp_paths:
        raise UsageProblem("our own metrics score hypotheses against references: give "
                           "`hyps` (and `refs`)")
    named = list(names) if names is not None else [system_name(path) for path in hyp_paths]
    repeated = sorted({name for name in named if named.count(name) > 1})
    if repeated:
        raise UsageProblem(f"two of `hyps` are the system {repeated[0]!r}: name them apart "
                           f"(NAME=FILE, or `names`)")
    return named


def _check_systems(human: Scores, hyp_paths: Sequence[str], names: Sequence[str]) -> None:
    """The hypothesis files are the human scores' systems, no more and no fewer (a system
    without any human score may be left out)."""
    for name, path in zip(names, hyp_paths):
        if name not in human.by_system:
            known = ", ".join(map(repr, list(human.by_system)[:10]))
            raise InputError(f"{path}: its system {name!r} is not in {human.source}, whose "
                             f"systems are {known}{' ...' if len(human.by_system) > 10 else ''}")
    for system, scores in human.by_system.items():
        if system not in names and any(score is not None for score in scores):
            raise InputError(f"{human.source} scores the system {system!r}, and none of the "
                             f"hypothesis files is {system!r} (they are "
                             f"{', '.join(map(repr, names))})")


def meta_eval_files(files: Sequence[str], metrics: Sequence[MetricLike] = (),
                    refs: Sequence[str] = (), hyps: Sequence[str] = (),
                    names: Optional[Sequence[str]] = None, *,
                    data_format: str = "mt-metrics-eval", label: Optional[str] = None,
                    jobs: int = 1, timeout: Optional[float] = DEFAULT_TIMEOUT,
                    **options: Any) -> MetaEvaluation:
    """meta-eval: `files` are the human score file, then metric score files (mt-metrics-
    eval's `SYSTEM<TAB>SCORE`), each metric named by its file name without suffix; and
    `metrics` (specs, as corpus-score's -m) score `hyps` against `refs` here. With
    `data_format` "oasst", `files` are an Open-Assistant export and scorers'
    {"message_id", "score"} files, judged by rank or by `label`. `options` are
    meta_evaluate's."""
    if data_format not in DATA_FORMATS:
        raise UsageProblem(f"`data_format` must be one of {', '.join(DATA_FORMATS)}, not "
                           f"{data_format!r}")
    if not files:
        raise UsageProblem("give the human judgements first")
    given: Dict[str, Any] = {}

    def add(name: str, scores: Any) -> None:
        if name in given:
            raise UsageProblem(f"two metrics are named {name!r}: rename one's file")
        given[name] = scores

    if data_format == "oasst":
        if metrics or refs or hyps:
            raise UsageProblem("an Open-Assistant export is judged against scorers' files of "
                               "{\"message_id\", \"score\"} lines, not by our own `metrics`")
        replies = read_oasst_replies(files[0], label)
        for path in files[1:]:
            add(metric_name(path), read_message_scores(path, replies))
        if not given:
            raise UsageProblem("give a scorer's file of {\"message_id\", \"score\"} lines "
                               "after the export")
        return meta_evaluate(replies, given, **options)
    if label is not None:
        raise UsageProblem("`label` names an Open-Assistant label (`data_format` oasst)")
    human = read_score_file(files[0])
    for path in files[1:]:
        add(metric_name(path), read_score_file(path))
    if metrics:
        if not refs:
            raise UsageProblem("our own metrics score `hyps` against references: give `refs`")
        system_names = _system_names(hyps, names)
        _check_systems(human, hyps, system_names)
        corpus = read_corpus(refs, hyps)
        items = len(next(iter(human.by_system.values())))
        if len(corpus.refs) != items:
            raise InputError(f"{hyps[0]} has {len(corpus.refs)} lines, but {human.source} has "
                             f"{items} scores per system: every system needs one line per "
                             f"scored segment")
        for name, scores in sentence_scores(metrics, corpus, system_names, jobs=jobs,
                                            timeout=timeout).items():
            add(name, scores)
    elif refs or hyps:
        raise UsageProblem("`refs` and `hyps` are scored by our own metrics: name them "
                           "(`metrics`)")
    if not given:
        raise UsageProblem("give metric score files after the human one, or our own "
                           "`metrics` with `refs` and `hyps`")
    return meta_evaluate(human, given, **options)
