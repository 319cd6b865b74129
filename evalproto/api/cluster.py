"""Scoring files, here or on a Dask cluster (corpus-score's one entry), and Dask bags of
items scored by any metric."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from evalproto.api.scoring import (
    Comparison,
    MetricLike,
    given_metrics,
    group_corpus,
    read_dataset,
    reduced,
    score_corpus,
    spec_of,
)
from evalproto.base.errors import UsageProblem
from evalproto.base.items import SegmentNumbers
from evalproto.base.progress import QUIET, Progress
from evalproto.readers.groups import read_groups
from evalproto.readers.text import STDIN
from evalproto.sources import dask as cluster
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import IN_PROCESS
from evalproto.stats.reductions import Analysis
from evalproto.stats.resampling import column_sums
from evalproto.stats.table import StatsTable


def score_files(ref_paths: Sequence[str], hyp_paths: Sequence[str],
                metrics: Sequence[MetricLike], analysis: Analysis, *, jobs: int = 1,
                timeout: Optional[float] = DEFAULT_TIMEOUT, sentence_level: bool = False,
                data_format: str = "text", ref_field: str = "answer", hyp_field: str = "pred",
                format_given: bool = False, groups: Optional[str] = None,
                names: Optional[Sequence[str]] = None, scheduler: Optional[str] = None,
                progress: Progress = QUIET) -> Comparison:
    """corpus-score: reference files (or a dataset) and hypothesis files scored here,
    with `jobs` copies of each metric, or on the Dask cluster at `scheduler`, whose
    workers read the files. Segments are grouped by the `groups` file, or by a
    dataset's own tags (except segment by segment, with `sentence_level`). See
    read_dataset for `format_given`."""
    if scheduler:
        check_cluster_inputs(jobs, [*ref_paths, *hyp_paths])
        if data_format != "text":
            raise UsageProblem(f"a cluster partitions plain text files by lines; "
                               f"--data-format {data_format} runs locally")
        return score_on_cluster(scheduler, ref_paths, hyp_paths, metrics, analysis, timeout,
                                groups, sentence_level, progress, names)
    corpus = read_dataset(data_format, ref_paths, hyp_paths, ref_field, hyp_field, progress,
                          names, format_given)
    group_corpus(corpus, groups or None)
    if sentence_level and not groups:
        corpus.tags = None  # a dataset's tags are groups, except for -sl
    return score_corpus(corpus, metrics, analysis, jobs, timeout, sentence_level, progress)


def check_cluster_inputs(jobs: int, paths: Sequence[str]) -> None:
    """A cluster's workers read the files and run the metrics: neither standard input
    nor copies on this machine (-j) can take part."""
    if jobs > 1:
        raise UsageProblem("-j runs copies on this machine, and --scheduler on the Dask "
                           "cluster's workers: choose one")
    if STDIN in paths:
        raise UsageProblem("with --scheduler, the workers read the files: standard input "
                           "('-') cannot be one")


def score_on_cluster(scheduler: str, ref_paths: Sequence[str], hyp_paths: Sequence[str],
                     metrics: Sequence[MetricLike], analysis: Analysis,
                     timeout: Optional[float] = DEFAULT_TIMEOUT, groups: Optional[str] = None,
                     sentence_level: bool = False, progress: Progress = QUIET,
                     names: Optional[Sequence[str]] = None) -> Comparison:
    """corpus-score with the statistics computed on a Dask cluster (`scheduler`: an
    address, or local[:N]); the figures are the local run's. `names` names the systems
    (by default, their files). The workers build their own copies of each metric."""
    specs = [spec_of(metric) for metric in given_metrics(metrics)]
    with cluster.connect(scheduler) as client:
        segments, computed = cluster.cluster_rows(client, specs, ref_paths, hyp_paths, timeout)
        ids = SegmentNumbers(segments)
        tags = read_groups(groups, ids) if groups else None
        named = list(names) if names is not None else list(hyp_paths)
        tables = [StatsTable(spec.spec, source,
                             {name: rows[path] for name, path in zip(named, hyp_paths)},
                             ids, tags, nrefs=len(ref_paths))
                  for spec, (source, rows) in zip(specs, computed)]
        return reduced(tables, analysis, sentence_level, progress)


def bag_stats(bag: Any, spec: str, kind: str = IN_PROCESS,
              timeout: Optional[float] = None) -> np.ndarray:
    """The stats rows of a Dask bag of (refs, hyp) items, in the bag's order, computed
    on the current Dask client's workers (kind "command" for a protocol command)."""
    return cluster.bag_stats(bag, spec, kind, timeout)


def bag_score(bag: Any, spec: str, kind: str = IN_PROCESS,
              timeout: Optional[float] = None) -> float:
    """The corpus score of a Dask bag of (refs, hyp) items, on the current Dask client."""
    total = column_sums(bag_stats(bag, spec, kind, timeout))
    return float(cluster.remote_source(spec, kind, timeout).score_many(total[None, :])[0])
