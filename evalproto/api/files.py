"""Files scored as the command line scores them: a corpus of files (corpus-score) and
one system's stats rows for a stats file (stats), here with copies of each metric or
on a Dask cluster whose workers read the files."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, List, Optional, Sequence, Tuple

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
from evalproto.readers.text import STDIN, read_corpus
from evalproto.sources.base import corpus_rows
from evalproto.sources.pool import open_source
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.stats.reductions import Analysis
from evalproto.stats.table import StatsTable


def score_files(ref_paths: Sequence[str], hyp_paths: Sequence[str],
                metrics: Sequence[MetricLike], analysis: Analysis, *, jobs: int = 1,
                timeout: Optional[float] = DEFAULT_TIMEOUT, sentence_level: bool = False,
                data_format: Optional[str] = None, ref_field: str = "answer",
                hyp_field: str = "pred", groups: Optional[str] = None,
                names: Optional[Sequence[str]] = None, scheduler: Optional[str] = None,
                progress: Progress = QUIET) -> Comparison:
    """corpus-score: reference files (or a dataset) and hypothesis files scored here,
    with `jobs` copies of each metric, or on the Dask cluster at `scheduler`, whose
    workers read the files. Segments are grouped by the `groups` file, or by a
    dataset's own tags (except segment by segment, with `sentence_level`).
    `data_format` is read_dataset's."""
    if scheduler:
        check_cluster_inputs(jobs, [*ref_paths, *hyp_paths])
        if data_format not in (None, "text"):
            raise UsageProblem(f"a cluster's workers split plain text files by lines: "
                               f"`data_format` {data_format} is read here, without "
                               f"`scheduler`")
        return _score_on_cluster(scheduler, ref_paths, hyp_paths, metrics, analysis, timeout,
                                groups, sentence_level, progress, names)
    corpus = read_dataset(data_format, ref_paths, hyp_paths, ref_field, hyp_field, progress,
                          names)
    group_corpus(corpus, groups or None)
    if sentence_level and not groups:
        corpus.tags = None  # a dataset's tags are groups, except for -sl
    return score_corpus(corpus, metrics, analysis, jobs, timeout, sentence_level, progress)


def file_stats(ref_paths: Sequence[str], hyp_path: str, metrics: Sequence[MetricLike],
                      *, first_id: int = 1, jobs: int = 1,
                      timeout: Optional[float] = DEFAULT_TIMEOUT,
                      scheduler: Optional[str] = None, progress: Progress = QUIET
                      ) -> Tuple[List[Any], Sequence[str], List[np.ndarray]]:
    """(the metrics' columns, the segment ids, each metric's rows) of one system's file,
    for a stats file (evalproto.reports.statsfiles.write_stats writes them): computed
    here with `jobs` copies of each metric, or on the Dask cluster at `scheduler`,
    whose workers read the files. The columns are MetricColumns
    (evalproto.readers.statsfiles)."""
    from evalproto.readers.statsfiles import MetricColumns  # here: corpus-score needs none

    specs = [spec_of(metric) for metric in given_metrics(metrics)]
    with ExitStack() as stack:
        if scheduler:
            from evalproto.sources import dask as cluster

            check_cluster_inputs(jobs, [*ref_paths, hyp_path])
            client = stack.enter_context(cluster.connect(scheduler))
            segments, computed = cluster.cluster_rows(client, specs, ref_paths, [hyp_path],
                                                      timeout)
            pairs: List[Tuple[Any, np.ndarray]] = [(source, rows[hyp_path])
                                                   for source, rows in computed]
        else:
            corpus = read_corpus(ref_paths, [hyp_path], progress)
            segments = len(corpus.refs)
            pairs = []
            for spec in specs:
                source = open_source(spec, stack, timeout, jobs)
                rows = corpus_rows(source, corpus.refs, corpus.systems, progress,
                                   label=spec.spec)
                pairs.append((source, next(iter(rows.values()))))
        columns = [MetricColumns(spec.spec, spec.kind, source.signature(),
                                 tuple(source.stat_names or ()), source.higher_is_better)
                   for spec, (source, _) in zip(specs, pairs)]
    ids = SegmentNumbers(segments, first_id)
    return columns, ids, [rows for _, rows in pairs]


def check_cluster_inputs(jobs: int, paths: Sequence[str]) -> None:
    """A cluster's workers read the files and run the metrics: neither standard input
    nor copies on this machine (-j) can take part."""
    if jobs > 1:
        raise UsageProblem("`jobs` runs copies on this machine, and `scheduler` on the Dask "
                           "cluster's workers: choose one")
    if STDIN in paths:
        raise UsageProblem("with `scheduler`, the workers read the files: standard input "
                           "('-') cannot be one")


def _score_on_cluster(scheduler: str, ref_paths: Sequence[str], hyp_paths: Sequence[str],
                     metrics: Sequence[MetricLike], analysis: Analysis,
                     timeout: Optional[float] = DEFAULT_TIMEOUT, groups: Optional[str] = None,
                     sentence_level: bool = False, progress: Progress = QUIET,
                     names: Optional[Sequence[str]] = None) -> Comparison:
    """corpus-score with the statistics computed on a Dask cluster (`scheduler`: an
    address, or local[:N]); the figures are the local run's. `names` names the systems
    (by default, their files). The workers build their own copies of each metric."""
    from evalproto.sources import dask as cluster  # here: only a cluster needs Dask's modules

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
