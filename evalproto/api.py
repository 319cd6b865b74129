"""evalproto's public Python API: load a metric, score lists of strings, compare systems,
read LM logs; and the file-level functions the command line is built on.

    >>> import evalproto
    >>> bleu = evalproto.load("bleu")
    >>> hyps = ["The cat sat on the mat.", "It rained all day."]
    >>> refs = [["The cat sat on the mat."], ["It was raining all day."]]
    >>> print(bleu.corpus_score(hyps, refs))
    BLEU = 71.59 91.7/80.0/75.0/66.7 (BP = 0.920 ratio = 0.923 hyp_len = 12 ref_len = 13)

Every figure is a reduction over stats rows (evalproto.stats); a metric is an evaluator
run in process, a command that speaks the SCORE/EVAL protocol, or a pool of copies of
either, all with the same interface.
"""

from __future__ import annotations

import io
import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from evalproto.base.errors import EvalprotoError, InputError, InputWarning, UsageProblem
from evalproto.base.gcpause import paused_gc
from evalproto.base.items import SegmentNumbers
from evalproto.base.numerals import json_number
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics import registry
from evalproto.metrics.lm import LMChallenge, LMZoo, Reranker
from evalproto.readers import datasets, lmlogs, surprisals
from evalproto.readers.groups import read_groups
from evalproto.readers.scores import read_scores
from evalproto.readers.statsfiles import MetricColumns, merge_stats, read_stats
from evalproto.readers.text import (
    STDIN,
    Corpus,
    check_inputs,
    looks_like_json_lines,
    read_bytes,
    read_corpus,
    read_lines,
    split_lines,
)
from evalproto.reports import lm as lm_reports
from evalproto.reports.report import (
    Report,
    ReportOptions,
    Texts,
    build_report,
    check_tags,
    report_json,
)
from evalproto.reports.results import format_results, format_segments, result_record
from evalproto.sources import dask as cluster
from evalproto.sources.base import StatsSource, corpus_rows
from evalproto.sources.pool import open_source
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.sources.specs import COMMAND, IN_PROCESS, MetricSpec
from evalproto.stats.reductions import (
    Analysis,
    Result,
    SegmentScores,
    analyse,
    segment_scores,
)
from evalproto.stats.resampling import DEFAULT_SEED, column_sums
from evalproto.stats.significance import check_ttest
from evalproto.stats.table import StatsTable, score_name

References = Sequence[Sequence[str]]


# -- one metric ------------------------------------------------------------------------

@dataclass
class Score:
    """A corpus score as sacrebleu gives one: the score, its signature, the summed
    statistics by name, and the metric's details (BLEU: sacrebleu's BLEUScore fields,
    with equal values). `str()` reads as sacrebleu's."""

    name: str
    score: float
    signature: str
    stats: Dict[str, float]
    details: Dict[str, Any] = field(default_factory=dict)
    n: int = 0
    verbose: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """The score as plain data, with sacrebleu's JSON keys (`verbose_score`)."""
        return {"name": self.name, "score": self.score, "signature": self.signature,
                "stats": dict(self.stats), "details": dict(self.details), "n": self.n,
                "verbose_score": self.verbose}

    def __str__(self) -> str:
        return f"{self.name} = {self.score:.2f}" + (f" {self.verbose}" if self.verbose else "")


class Metric:
    """A metric ready to score lists of strings: an evaluator in process, an evaluator
    command over the pipe, or a pool of `jobs` copies of either. Use it as a context
    (or call `close`) to stop the processes it started."""

    def __init__(self, spec: MetricSpec, jobs: int = 1,
                 timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
            raise ValueError(f"jobs must be a whole number >= 1, got {jobs!r}")
        self.spec = spec
        self._stack = ExitStack()
        self.source: StatsSource = open_source(spec, self._stack, timeout, jobs)

    @property
    def label(self) -> str:
        """The metric as it was named: its spec, or its command."""
        return self.spec.spec

    @property
    def name(self) -> str:
        """The score's name, as sacrebleu names it (BLEU, chrF2, TER)."""
        return score_name(self.source, self.label)

    @property
    def stat_names(self) -> Tuple[str, ...]:
        """The names of the statistics in each row."""
        return tuple(self.source.stat_names or ())

    @property
    def higher_is_better(self) -> bool:
        """Whether a higher score is better (BLEU) or worse (TER)."""
        return self.source.higher_is_better

    @property
    def signature(self) -> str:
        """The metric's part of a signature; scores add the data's (nrefs)."""
        return self.source.signature()

    def stats_table(self, hyps: Sequence[str], refs: Optional[References] = None, *,
                    ref_streams: Optional[References] = None, system: str = "system",
                    ids: Optional[Sequence[str]] = None,
                    groups: Optional[Sequence[Sequence[str]]] = None,
                    strip: bool = True) -> StatsTable:
        """The statistics rows of one system, one per segment, as a table that the
        reductions read: `table.score()`, `table.bootstrap(1000)`, ... Texts are
        stripped of surrounding whitespace unless `strip` is false (see
        evalproto.base.items)."""
        segments = segment_references(hyps, refs, ref_streams)
        rows = corpus_rows(self.source, segments, {system: list(hyps)}, label=self.label,
                           strip=strip)
        return StatsTable(self.label, self.source, rows,
                          list(ids) if ids is not None else [],
                          [list(tags) for tags in groups] if groups is not None else None,
                          nrefs=count_references(segments))

    def corpus_score(self, hyps: Sequence[str], refs: Optional[References] = None, *,
                     ref_streams: Optional[References] = None) -> Score:
        """The corpus score of hypotheses against their references: `refs` holds one
        list of references per segment; sacrebleu's layout (one list per reference,
        each as long as `hyps`) goes by keyword, as `ref_streams`."""
        table = self.stats_table(hyps, refs, ref_streams=ref_streams)
        (result,) = analyse([table], Analysis())
        return self._score(result)

    def sentence_scores(self, hyps: Sequence[str], refs: Optional[References] = None, *,
                        ref_streams: Optional[References] = None) -> np.ndarray:
        """Each segment's own score, as sacrebleu's sentence_score gives it (BLEU with
        effective order)."""
        table = self.stats_table(hyps, refs, ref_streams=ref_streams)
        (scores,) = segment_scores([table])
        return scores.scores

    def score_stats(self, rows: np.ndarray) -> Score:
        """The corpus score of statistics rows (one per segment), summed row after row
        as sacrebleu sums them."""
        table = StatsTable(self.label, self.source, {"system": np.asarray(rows)})
        (result,) = analyse([table], Analysis())
        return self._score(result)

    def _score(self, result: Result) -> Score:
        total = result.stats
        details = getattr(self.source, "details", None)
        return Score(result.name, result.score, result.signature,
                     {name: json_number(value) for name, value in zip(result.stat_names, total)},
                     details(total) if details else {}, result.n, result.verbose)

    def input_warnings(self, hyps: Sequence[str]) -> List[str]:
        """What looks wrong with a whole system's hypotheses for this metric (BLEU:
        sacrebleu's check for text that was not detokenized), in words; nothing for an
        evaluator command, which cannot say."""
        return input_warnings(self.source, hyps)

    def close(self) -> None:
        """Stop the evaluator processes this metric started, checking that they ended
        cleanly."""
        self._stack.close()

    def __enter__(self) -> Metric:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._stack.__exit__(exc_type, *rest)

    def __repr__(self) -> str:
        return f"<evalproto.Metric {self.label!r}: {self.signature}>"


def load(spec: Optional[str] = None, /, *, command: Optional[str] = None, jobs: int = 1,
         timeout: Optional[float] = DEFAULT_TIMEOUT, **options: Any) -> Metric:
    """A metric, by spec (`load("bleu", tokenize="intl")`, or `load("bleu --tokenize
    intl")`) or as a command that speaks the protocol (`load(command="bleu-evaluator
    -lc")`). Options are the evaluator's, as Python keywords; an unknown option or a
    bad value is a TypeError or ValueError that says what was expected. `jobs` runs
    copies in parallel; `timeout` bounds each reply of a command (None: no bound)."""
    if (spec is None) == (command is None):
        raise TypeError("load() takes a metric spec, such as 'bleu', or command=...")
    if command is not None:
        if options:
            raise TypeError(f"options go into the command itself, not {sorted(options)}")
        if not isinstance(command, str):
            raise TypeError(f"command must be a string, got {type(command).__name__}")
        return Metric(MetricSpec(COMMAND, command), jobs, timeout)
    if not isinstance(spec, str):
        raise TypeError(f"a metric spec is a string such as 'bleu', got {type(spec).__name__}")
    if options:
        name = spec.split()[0] if spec.strip() else spec
        evaluator = registry.load(name).from_options(**options)
        spec = " ".join([spec, *(_option_words(evaluator, options))])
    registry.from_spec(spec)  # checked here, so that errors come before any work
    return Metric(MetricSpec(IN_PROCESS, spec), jobs, timeout)


def _option_words(evaluator: Any, options: Mapping[str, Any]) -> List[str]:
    """Python keyword options as the words of a spec, e.g. ["--tokenize", "intl"]."""
    known = {param.name: param for param in type(evaluator).options}
    words: List[str] = []
    for key, value in options.items():
        param = known[key]
        if param.is_flag:
            words += [param.opts[0]] if value else []
        elif value is not None:
            words += [param.opts[0], _quoted(str(value))]
    return words


def _quoted(word: str) -> str:
    import shlex
    return shlex.quote(word)


def segment_references(hyps: Sequence[str], refs: Optional[References],
                       ref_streams: Optional[References]) -> List[List[str]]:
    """One list of references per segment, from either layout, checked: a string where
    a list belongs, lists of other lengths than the hypotheses (K streams passed as
    `refs`, the usual slip) and both layouts at once are errors that say what was
    expected."""
    if isinstance(hyps, (str, bytes)) or not isinstance(hyps, Sequence):
        raise TypeError(f"hyps must be a list of hypothesis strings, got "
                        f"{type(hyps).__name__}")
    if (refs is None) == (ref_streams is None):
        raise TypeError("give the references once: refs (one list of references per "
                        "segment) or ref_streams= (sacrebleu's layout, one list per "
                        "reference)")
    if ref_streams is not None:
        if isinstance(ref_streams, (str, bytes)) or not all(
                isinstance(stream, Sequence) and not isinstance(stream, (str, bytes))
                for stream in ref_streams):
            raise TypeError("ref_streams must be a list of reference lists (sacrebleu's "
                            "layout: one list per reference, each as long as hyps)")
        for number, stream in enumerate(ref_streams, 1):
            if len(stream) != len(hyps):
                raise ValueError(f"reference stream {number} has {len(stream)} references "
                                 f"but there are {len(hyps)} hypotheses")
        return [[ref for ref in segment if ref is not None] for segment in zip(*ref_streams)]
    if isinstance(refs, (str, bytes)) or not isinstance(refs, Sequence):
        raise TypeError(f"refs must be a list with one list of references per segment, got "
                        f"{type(refs).__name__}")
    if len(refs) != len(hyps):
        streams = len(refs) and all(isinstance(stream, Sequence) and not isinstance(
            stream, (str, bytes)) and len(stream) == len(hyps) for stream in refs)
        hint = (" It looks like sacrebleu's layout (one list per reference): pass it as "
                "ref_streams=." if streams else "")
        raise ValueError(f"refs has {len(refs)} entries but there are {len(hyps)} "
                         f"hypotheses: refs holds one list of references per segment.{hint}")
    segments = []
    for number, segment in enumerate(refs, 1):
        if isinstance(segment, (str, bytes)):
            raise TypeError(f"refs[{number - 1}] is of type {type(segment).__name__}; each entry of "
                            f"refs is a list of references, e.g. [ref] for one")
        segments.append(list(segment))
    return segments


def input_warnings(source: StatsSource, hyps: Sequence[str]) -> List[str]:
    """A source's warnings about a system's hypotheses (see Evaluator.input_warnings)."""
    check = getattr(source, "input_warnings", None)
    return list(check(hyps)) if check is not None else []


def count_references(refs: References) -> Union[int, str]:
    """References per segment, or "var" when it varies, as sacrebleu writes it."""
    counts = {len(segment) for segment in refs}
    return counts.pop() if len(counts) == 1 else "var"


# -- several systems and metrics -------------------------------------------------------

@dataclass
class Comparison:
    """Every (system, metric) result of a comparison, corpus first, then each group;
    and each segment's own scores when they were asked for."""

    results: List[Result]
    segments: List[SegmentScores] = field(default_factory=list)
    ids: List[str] = field(default_factory=list)

    def to_dict(self) -> List[Dict[str, Any]]:
        """The results as records (the JSON Lines of corpus-score)."""
        return [result_record(result) for result in self.results]

    def to_pandas(self) -> Any:
        """One row per (system, metric[, group]): score, mean, ci, p_value, n, signature,
        baseline. pandas is an optional extra: pip install 'evalproto[pandas]'."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas() needs pandas, an optional extra: "
                              "pip install 'evalproto[pandas]'") from None
        columns = ["system", "metric", "group", "score", "mean", "ci", "p_value", "n",
                   "signature", "baseline"]
        return pandas.DataFrame([{column: getattr(result, column) for column in columns}
                                 for result in self.results], columns=columns)

    def __str__(self) -> str:
        if self.segments:
            return format_segments(self.segments, self.ids, "text")
        return format_results(self.results, "text")


def compare(systems: Union[Mapping[str, Sequence[str]], Sequence[Sequence[str]]],
            refs: Optional[References] = None, *, ref_streams: Optional[References] = None,
            metrics: Sequence[Union[str, Metric]] = ("bleu",), confidence: Union[bool, int] = False,
            paired: Optional[str] = None, paired_n: Optional[int] = None,
            seed: Optional[int] = DEFAULT_SEED, groups: Optional[Sequence[Sequence[str]]] = None,
            jobs: int = 1, timeout: Optional[float] = DEFAULT_TIMEOUT) -> Comparison:
    """Several systems under several metrics, as `corpus-score` compares them (the same
    figures): `confidence` adds bootstrap intervals (True for 1000 resamples, or a
    number), `paired` tests each system against the first ("bs": paired bootstrap,
    "ar": approximate randomization, with `paired_n` resamples or trials; sacrebleu's
    defaults 1000 and 10000), `groups` gives each segment's tags for per-group figures.
    Systems are a {name: hypotheses} mapping, or a list (named "system 1", ...)."""
    named = dict(systems) if isinstance(systems, Mapping) else {
        f"system {number}": hyps for number, hyps in enumerate(systems, 1)}
    if not named:
        raise ValueError("compare() needs at least one system")
    segments = None
    for name, hyps in named.items():
        try:
            segments = segment_references(hyps, refs, ref_streams)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"system {name!r}: {exc}") from None
    analysis = analysis_of(confidence, paired, paired_n, seed, len(named))
    corpus = Corpus(segments, {name: list(hyps) for name, hyps in named.items()},
                    SegmentNumbers(len(segments)),
                    [list(tags) for tags in groups] if groups is not None else None)
    if corpus.tags is not None and len(corpus.tags) != len(segments):
        raise ValueError(f"groups has {len(corpus.tags)} entries for {len(segments)} segments")
    given = [metric if isinstance(metric, Metric) else None for metric in metrics]
    specs = [MetricSpec(IN_PROCESS, metric) if isinstance(metric, str) else metric.spec
             for metric in metrics]
    return score_corpus(corpus, specs, analysis, jobs, timeout, loaded=given)


def analysis_of(confidence: Union[bool, int], paired: Optional[str], paired_n: Optional[int],
                seed: Optional[int], systems: int) -> Analysis:
    """An Analysis from compare()'s arguments, checked."""
    if paired is not None and systems < 2:
        raise ValueError("paired tests compare systems: give two or more, the first being "
                         "the baseline")
    resamples = 1000 if confidence is True else int(confidence or 0)
    default_n = {"bs": 1000, "ar": 10000}.get(paired or "", 0)
    return Analysis(confidence=resamples, paired=paired,
                    paired_n=default_n if paired_n is None else paired_n, seed=seed)


def score_corpus(corpus: Corpus, specs: Sequence[MetricSpec], analysis: Analysis,
                 jobs: int = 1, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 sentence_level: bool = False, progress: Progress = QUIET,
                 loaded: Optional[Sequence[Optional[Metric]]] = None) -> Comparison:
    """Every system of a corpus under every metric, reduced as `analysis` asks (or
    segment by segment); the command line's corpus-score. Metrics already `loaded`
    are used as they are; the others are started here and stopped at the end."""
    with ExitStack() as stack:
        tables = _corpus_tables(stack, corpus, specs, jobs, timeout, progress, loaded,
                                ttest=analysis.paired == "ttest")
        return _reduced(tables, analysis, sentence_level, progress)


def _corpus_tables(stack: ExitStack, corpus: Corpus, specs: Sequence[MetricSpec], jobs: int,
                   timeout: Optional[float], progress: Progress,
                   loaded: Optional[Sequence[Optional[Metric]]] = None,
                   ttest: bool = False) -> List[StatsTable]:
    """One table per metric of every system of the corpus; the metrics' processes stop
    when `stack` closes. With `ttest`, a metric the paired t-test does not apply to is
    refused before any segment is scored."""
    tables = []
    for number, spec in enumerate(specs):
        metric = loaded[number] if loaded and loaded[number] is not None else None
        source = metric.source if metric else open_source(spec, stack, timeout, jobs)
        if ttest:
            check_ttest(source, spec.spec)
        for system, hyps in corpus.systems.items():
            for warning in input_warnings(source, hyps):
                warnings.warn(f"{system}: {spec.spec}: {warning}", InputWarning)
        rows = corpus_rows(source, corpus.refs, corpus.systems, progress, label=spec.spec)
        tables.append(StatsTable(spec.spec, source, rows, corpus.ids, corpus.tags,
                                 nrefs=corpus.nrefs))
    return tables


def _reduced(tables: Sequence[StatsTable], analysis: Analysis, sentence_level: bool,
             progress: Progress) -> Comparison:
    if sentence_level:
        return Comparison([], segment_scores(tables), tables[0].ids)
    return Comparison(analyse(tables, analysis, progress), ids=tables[0].ids)


def score_on_cluster(scheduler: str, ref_paths: Sequence[str], hyp_paths: Sequence[str],
                     specs: Sequence[MetricSpec], analysis: Analysis,
                     timeout: Optional[float] = DEFAULT_TIMEOUT, groups: Optional[str] = None,
                     sentence_level: bool = False, progress: Progress = QUIET,
                     names: Optional[Sequence[str]] = None) -> Comparison:
    """corpus-score with the statistics computed on a Dask cluster (`scheduler`: an
    address, or local[:N]); the figures are the local run's. `names` names the systems
    (by default, their files)."""
    with cluster.connect(scheduler) as client:
        segments, computed = cluster.cluster_rows(client, specs, ref_paths, hyp_paths, timeout)
        ids = SegmentNumbers(segments)
        tags = read_groups(groups, ids) if groups else None
        named = list(names) if names is not None else list(hyp_paths)
        tables = [StatsTable(spec.spec, source,
                             {name: rows[path] for name, path in zip(named, hyp_paths)},
                             ids, tags, nrefs=len(ref_paths))
                  for spec, (source, rows) in zip(specs, computed)]
        return _reduced(tables, analysis, sentence_level, progress)


def bag_stats(bag: Any, spec: str, kind: str = IN_PROCESS,
              timeout: Optional[float] = None) -> np.ndarray:
    """The stats rows of a Dask bag of (refs, hyp) items, in the bag's order, computed
    on the current Dask client's workers (kind "command" for a protocol command)."""
    return cluster.bag_stats(bag, spec, kind, timeout)


def bag_score(bag: Any, spec: str, kind: str = IN_PROCESS, timeout: Optional[float] = None) -> float:
    """The corpus score of a Dask bag of (refs, hyp) items, on the current Dask client."""
    total = column_sums(bag_stats(bag, spec, kind, timeout))
    return float(cluster.remote_source(spec, kind, timeout).score_many(total[None, :])[0])


# -- stats files -------------------------------------------------------------------------

def write_stats_files(corpus_refs: Corpus, specs: Sequence[MetricSpec], system: str,
                      first_id: int = 1, jobs: int = 1,
                      timeout: Optional[float] = DEFAULT_TIMEOUT, progress: Progress = QUIET,
                      scheduler: Optional[str] = None, ref_paths: Sequence[str] = (),
                      hyp_path: str = "") -> Tuple[List[MetricColumns], List[str], List[np.ndarray]]:
    """(the metrics' columns, the segment ids, each metric's rows) of one system, for a
    stats file (see `stats_file_text`)."""
    with ExitStack() as stack:
        if scheduler:
            client = stack.enter_context(cluster.connect(scheduler))
            segments, computed = cluster.cluster_rows(client, specs, ref_paths, [hyp_path],
                                                      timeout)
            pairs = [(source, rows[hyp_path]) for source, rows in computed]
        else:
            segments = len(corpus_refs.refs)
            pairs = []
            for spec in specs:
                source = open_source(spec, stack, timeout, jobs)
                rows = corpus_rows(source, corpus_refs.refs, corpus_refs.systems, progress,
                                   label=spec.spec)
                pairs.append((source, next(iter(rows.values()))))
        columns = [MetricColumns(spec.spec, spec.kind, source.signature(),
                                 tuple(source.stat_names or ()), source.higher_is_better)
                   for spec, (source, _) in zip(specs, pairs)]
    ids = SegmentNumbers(segments, first_id)
    return columns, ids, [rows for _, rows in pairs]


def reduce_stats(paths: Sequence[str], evaluators: Sequence[str], analysis: Analysis,
                 partial: bool = False, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 groups: Optional[str] = None, progress: Progress = QUIET) -> Comparison:
    """Stats files merged and reduced as corpus-score reduces a corpus. A metric written
    by a command is run with the command the caller names (`evaluators`, in the files'
    order), never with the one written in the file: a stats file is data."""
    with ExitStack() as stack:
        tables = _stats_tables(stack, paths, evaluators, partial, timeout, groups)
        if analysis.paired and len(tables[0].systems) < 2:
            raise UsageProblem("paired tests compare systems: the stats files hold one "
                               "system (--system names it)")
        return Comparison(analyse(tables, analysis, progress), ids=tables[0].ids)


def _stats_tables(stack: ExitStack, paths: Sequence[str], evaluators: Sequence[str],
                  partial: bool, timeout: Optional[float], groups: Optional[str],
                  mixed: bool = False) -> List[StatsTable]:
    """One table per metric of merged stats files, every row checked against the
    metric's rules. With `mixed`, files of different metrics may be given together, as
    long as each metric's files cover the same systems and segments."""
    files = [read_stats(path) for path in paths]
    batches: Dict[Tuple[MetricColumns, ...], List[Any]] = {}
    for stats_file in files:
        batches.setdefault(tuple(stats_file.metrics) if mixed else (), []).append(stats_file)
    merged = [(batch, merge_stats(batch, partial)) for batch in batches.values()]
    first = merged[0][1]
    for batch, other in merged[1:]:
        if set(other.systems) != set(first.systems) or other.ids != first.ids:
            raise InputError(
                f"{batch[0].path} and {files[0].path} hold other metrics for other systems "
                f"or segments ({', '.join(other.systems)} on {len(other.ids)} segments; "
                f"{', '.join(first.systems)} on {len(first.ids)}); a report compares the "
                f"same systems on the same segments under every metric")
    tags = read_groups(groups, first.ids, partial) if groups else None
    commands = iter(evaluators)
    tables = []
    for batch, stats in merged:
        for number, metric in enumerate(stats.metrics):
            spec = MetricSpec(metric.kind, _reduce_spec(metric, commands))
            source = open_source(spec, stack, timeout)
            if source.signature() != metric.signature:
                raise EvalprotoError(
                    f"the stats files were written with the signature {metric.signature!r}, "
                    f"but {spec.spec!r} here has {source.signature()!r}; their scores would "
                    f"not be comparable")
            for stats_file in batch:
                _check_rows(source, stats_file, number)
            tables.append(StatsTable(metric.spec, source, {
                system: stats.systems[system][number] for system in first.systems},
                first.ids, tags, nrefs=stats.nrefs))
    extra = list(commands)
    if extra:
        raise UsageProblem(f"-e {extra[0]!r}: the stats files hold no other metric "
                           f"written by a command")
    return tables


def _reduce_spec(metric: MetricColumns, commands: Iterator[str]) -> str:
    if metric.kind == IN_PROCESS:
        return metric.spec
    command = next(commands, None)
    if command is None:
        import shlex
        raise UsageProblem(
            f"the stats files were written by the evaluator command {metric.spec!r}. A stats "
            f"file is data, and evalproto runs no command named in data: to reduce them, "
            f"name the command yourself: evalproto reduce -e {shlex.quote(metric.spec)} ...")
    return command


def _check_rows(source: Any, stats_file: Any, number: int) -> None:
    """Refuse rows that the metric could not have written (a row with more matches than
    n-grams, a negative length): they would move the score without a word."""
    if not hasattr(source, "broken_rule"):
        return  # an external evaluator declares no rules
    broken = source.broken_rule(stats_file.rows[number])
    if broken is not None:
        row, rule = broken
        raise InputError(f"{stats_file.path}: line {stats_file.first_line + row}: these "
                         f"{stats_file.metrics[number].spec} statistics are impossible: "
                         f"they break {rule}")


# -- LM evaluation logs ----------------------------------------------------------------

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
    groups: sentences)."""
    data = read_bytes(path)
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
    one's figures; `confidence` bootstrap resamples over messages (sentences);
    `reranker` fixed (alpha, beta) instead of fitted ones; `raw` the sums (lmc's
    --no-human); `skip_first_token` leaves out each LM Zoo sentence's first token."""

    by: Optional[str] = None
    confidence: int = 0
    seed: Optional[int] = DEFAULT_SEED
    reranker: Optional[Reranker] = None
    raw: bool = False
    skip_first_token: bool = False


def lm_summaries(path: str, options: LMOptions = LMOptions(),
                 progress: Progress = QUIET) -> LMScore:
    """Everything lm-score reports for one log or table. The collector stays paused
    until the table is freed: its one pass over a 1M-event table's objects took 0.3 s,
    and found nothing to collect."""
    with paused_gc():
        table = lm_table(path, options.reranker, options.skip_first_token, progress)
        if options.by is not None and options.by != table.group_key:
            raise InputError(f"{path}: cannot break down by {options.by}; this kind of table "
                             f"has {table.group_key}")
        results = analyse([table], Analysis(confidence=options.confidence, seed=options.seed,
                                            groups=options.by is not None), progress)
        records = [lm_reports.summary(result, table.metric, path, options.raw)
                   for result in results]
        return LMScore(path, records[0], records[1:], results)


def lm_score(logs: Union[str, Sequence[str]], *, by: Optional[str] = None,
             confidence: Union[bool, int] = False, seed: Optional[int] = DEFAULT_SEED,
             reranker: Optional[Tuple[float, float]] = None, raw: bool = False,
             skip_first_token: bool = False, scheduler: Optional[str] = None,
             progress: Progress = QUIET) -> List[LMScore]:
    """lmc stats' figures for LM Challenge logs (any game) and LM Zoo surprisal tables:
    one LMScore per log, with the options of LMOptions (`confidence=True` is 1000
    resamples); with `scheduler`, each log is read on a Dask worker. `progress` is
    told of reading and resampling (on a cluster, the workers say nothing)."""
    paths = [logs] if isinstance(logs, str) else list(logs)
    check_inputs(paths, ())
    options = LMOptions(by, 1000 if confidence is True else int(confidence or 0), seed,
                        Reranker(*reranker) if reranker is not None else None, raw,
                        skip_first_token)
    if scheduler:
        if STDIN in paths:
            raise UsageProblem("with a scheduler, the workers read the files: standard "
                               "input ('-') cannot be one")
        with cluster.connect(scheduler) as client:
            return cluster.run_each(client, lm_summaries, [(path, options) for path in paths])
    return [lm_summaries(path, options, progress) for path in paths]


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
               progress: Progress = QUIET) -> LMComparison:
    """A paired test of every model rate between two logs of the same data (`lmc diff`
    with p-values), resampling (or swapping) whole messages. Logs of other data, or of
    the same events in another order, are refused; entropy is left out when the two
    models scored different tokens; logs that share no rate are refused."""
    fixed = Reranker(*reranker) if reranker is not None else None
    with paused_gc():
        tables = [lm_table(path, fixed, progress=progress) for path in (baseline, other)]
        metrics = [table.metric for table in tables]
        if not all(isinstance(metric, LMChallenge) for metric in metrics):
            raise InputError("lm-compare compares LM Challenge logs")
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
        shown = [set(_model_rates(metric, total)) for metric, total in zip(metrics, totals)]
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
        base, compared = analyse([table], Analysis(paired=test, paired_n=samples, seed=seed,
                                                   inclusive=True), progress)
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


def _model_rates(metric: LMChallenge, total: np.ndarray) -> List[str]:
    """The model's rates that lmc's summary of this total shows."""
    raw = lm_reports.raw_summary(Result("", "", 0.0, "", 0, total, metric.stat_names, True),
                                 metric)
    sections = lm_reports.shown_sections(raw)
    return [name for name in metric.tested if name.split(".")[0] in sections]


def _sections(rates: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(name.split(".")[0] for name in rates)) or "no rate"


# -- what is installed -------------------------------------------------------------------

def registered_evaluators() -> Dict[str, Any]:
    """Every registered evaluator (built-in or plugin), by name, as its entry point."""
    return registry.available()


def describe_evaluator(name: str) -> str:
    """A registered evaluator's name, direction, description, stats and options."""
    return registry.describe(name)


def evaluator_name(spec: str) -> str:
    """The evaluator a spec names: "bleu" for "bleu --tokenize intl". A spec that
    cannot be parsed is a SpecError."""
    return registry.spec_words(spec)[0]


def with_options(spec: str, options: Sequence[Tuple[str, Optional[str], str]]) -> str:
    """The spec with more of its evaluator's options, each given as (option, value or
    None for a flag, how the caller was told it: "-tok zh"), checked: an unknown
    evaluator or option, or an option the spec sets to something else, is a SpecError
    (a UsageProblem) that names both. `with_options(spec, [])` checks a spec's options
    without building its evaluator."""
    return registry.with_options(spec, options)


def info(spec: str) -> Dict[str, Any]:
    """The INFO JSON of an evaluator spec, e.g. "bleu --tokenize intl"."""
    return registry.from_spec(spec).info()


def read_dataset(data_format: str, ref_paths: Sequence[str], hyp_paths: Sequence[str],
                 ref_field: str = "answer", hyp_field: str = "pred",
                 progress: Progress = QUIET, names: Optional[Sequence[str]] = None) -> Corpus:
    """A corpus from text files (references first), or a JSON Lines dataset with its
    prediction files (`dynabench`, `oasst`). `names` names the systems, one per
    hypothesis file (by default, the files' paths name them). A text file whose every
    line is a JSON object is read as text, as asked, with an InputWarning that names
    the option."""
    if names is not None and len(names) != len(hyp_paths):
        raise UsageProblem(f"{len(names)} names for {len(hyp_paths)} systems")
    if data_format == "text":
        corpus = read_corpus(ref_paths, hyp_paths, progress)
        for path, lines in zip([*ref_paths, *hyp_paths],
                               [*corpus.refs.columns, *corpus.systems.values()]):
            if looks_like_json_lines(lines):
                warnings.warn(f"{path}: every line is a JSON object, but the file is read as "
                              f"plain text, one segment per line: if it is a dataset or "
                              f"predictions, give its format with --data-format (dynabench "
                              f"or oasst)", InputWarning)
    elif len(ref_paths) != 1:
        raise UsageProblem(f"--data-format {data_format} takes one dataset file, then the "
                           f"prediction files")
    elif data_format == "dynabench":
        corpus = datasets.read_dynabench(ref_paths[0], hyp_paths, ref_field, hyp_field)
    elif data_format == "oasst":
        corpus = datasets.read_oasst(ref_paths[0], hyp_paths, hyp_field)
    else:
        raise ValueError(f"unknown data format {data_format!r}; expected text, dynabench or "
                         f"oasst")
    if names is not None:
        corpus.systems = {name: corpus.systems[path] for name, path in zip(names, hyp_paths)}
    return corpus


# -- reports -------------------------------------------------------------------------------

REPORT_METRICS = (MetricSpec(IN_PROCESS, "bleu"), MetricSpec(IN_PROCESS, "chrf"))
"""The metrics of a report when none is named."""


def report_corpus(corpus: Corpus, specs: Sequence[MetricSpec] = REPORT_METRICS,
                  options: ReportOptions = ReportOptions(), *, groups: Optional[str] = None,
                  source: Optional[str] = None, freq_corpus: Optional[str] = None,
                  jobs: int = 1, timeout: Optional[float] = DEFAULT_TIMEOUT,
                  progress: Progress = QUIET) -> Report:
    """Every figure of a report on a corpus's systems (the first is the baseline):
    scores with intervals, all-pairs tests and clusters, groups (from the `groups`
    file, or the corpus's own tags), sentence scores with wins and losses, and
    compare-mt's analyses (word frequencies from the `freq_corpus` file, or from the
    first reference). `source` is a file of the segments' sources, shown beside the
    wins and losses."""
    if groups is not None:
        corpus.tags = read_groups(groups, corpus.ids)
    elif corpus.tags is not None and not any(corpus.tags):
        corpus.tags = None
    if corpus.tags is not None:
        check_tags(corpus.tags, groups or "the dataset's tags")
    sources = None
    if source is not None:
        sources = read_lines(source)
        if len(sources) != len(corpus.refs):
            raise InputError(f"{source} has {len(sources)} lines but there are "
                             f"{len(corpus.refs)} segments; the source file needs one line "
                             f"per segment")
    texts = Texts(corpus.refs, corpus.systems, sources,
                  None if freq_corpus is None else compare_mt_lines(freq_corpus))
    with ExitStack() as stack:
        tables = _corpus_tables(stack, corpus, specs, jobs, timeout, progress)
        return build_report(tables, options, texts, progress)


def compare_mt_lines(path: str) -> List[str]:
    """The lines of a UTF-8 file as compare-mt reads them (Python's text mode: "\n",
    "\r\n" and a lone "\r" end a line), checked as evalproto checks text files."""
    data = read_bytes(path)
    split_lines(path, data)  # an error names the line of a byte that is not UTF-8
    if not data:
        raise InputError(f"{path}: file is empty")
    return [line[:-1] if line.endswith("\n") else line
            for line in io.StringIO(data.decode("utf-8"), newline=None)]


def report_from_stats(paths: Sequence[str], evaluators: Sequence[str] = (),
                      options: ReportOptions = ReportOptions(), groups: Optional[str] = None,
                      partial: bool = False, timeout: Optional[float] = DEFAULT_TIMEOUT,
                      progress: Progress = QUIET) -> Report:
    """A report on stats files (no text analyses: the texts are not in them). Files of
    different metrics for the same systems and segments may be mixed (BLEU written by
    `evalproto stats`, COMET by `evalproto import-scores`): each metric's shards are
    joined as `reduce` joins them."""
    with ExitStack() as stack:
        tables = _stats_tables(stack, paths, evaluators, partial, timeout, groups,
                               mixed=True)
        if tables[0].groups is not None:
            check_tags(tables[0].groups, groups or "the groups")
        return build_report(tables, options, None, progress)


def format_report(report: Report, output_format: str = "html", width: int = 1,
                  progress: Progress = QUIET) -> str:
    """A report as an HTML page ("html"), LaTeX tables ("latex") or JSON ("json")."""
    if output_format == "html":
        from evalproto.reports.html import format_html
        return format_html(report, width, progress)
    if output_format == "latex":
        from evalproto.reports.latex import format_latex
        return format_latex(report, width)
    if output_format == "json":
        return report_json(report)
    raise ValueError(f"unknown report format {output_format!r}; expected html, latex or json")


# -- segment scores from elsewhere -----------------------------------------------------

def import_scores(path: str, metric: str, signature: str = "",
                  field: Optional[str] = None, lower_is_better: bool = False
                  ) -> Tuple[List[MetricColumns], List[str], List[np.ndarray]]:
    """(the columns, the segment ids, the rows) of a stats file of segment scores
    computed elsewhere (see evalproto.readers.scores for the formats), under the `mean`
    metric named `metric`: rows of (score, score², 1), so that `reduce` and `report
    --stats` give intervals, paired tests and groups of the mean score."""
    if not metric.strip() or any(character in metric for character in "\t\n\r"):
        raise UsageProblem(f"--metric must name the metric (e.g. COMET), got {metric!r}")
    scores = read_scores(path, field)
    words = ["mean", metric] + (["--signature", signature] if signature else []) + (
        ["--lower-is-better"] if lower_is_better else [])
    import shlex
    spec = shlex.join(words)
    evaluator = registry.from_spec(spec)
    values = np.array(scores.values, dtype=np.float64)
    with np.errstate(over="ignore"):
        rows = np.column_stack([values, values * values, np.ones_like(values)])
    broken = evaluator.broken_rule(rows)
    if broken is not None:
        raise InputError(f"{path}: line {scores.lines[broken[0]]}: the score "
                         f"{scores.values[broken[0]]!r} cannot be averaged: its square "
                         f"overflows")
    columns = [MetricColumns(spec, IN_PROCESS, evaluator.signature(), evaluator.stat_names,
                             evaluator.higher_is_better)]
    return columns, SegmentNumbers(len(values)), [rows]

