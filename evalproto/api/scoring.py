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

from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

import click
import numpy as np

from evalproto.base.errors import InputWarning, UsageProblem, warn
from evalproto.base.items import SegmentNumbers
from evalproto.base.numerals import json_number
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics import registry
from evalproto.metrics.pairwise import Batches, all_pairs, checked_batches
from evalproto.readers.groups import read_groups
from evalproto.readers.text import (
    Corpus,
    SegmentReferences,
    looks_like_json_lines,
    read_corpus,
)
from evalproto.reports.results import format_results, format_segments, result_record
from evalproto.sources.base import StatsSource, corpus_rows
from evalproto.sources.pool import open_source
from evalproto.sources.process import DEFAULT_TIMEOUT, checked_timeout
from evalproto.sources.specs import COMMAND, IN_PROCESS, MetricSpec
from evalproto.stats.reductions import (
    Analysis,
    Result,
    SegmentScores,
    analyse,
    segment_scores,
)
from evalproto.stats.resampling import DEFAULT_SEED
from evalproto.stats.significance import check_ttest
from evalproto.stats.table import StatsTable, score_name

References = Sequence[Sequence[str]]


@dataclass
class Score:
    """A corpus score as sacrebleu gives one: the score, its signature, the summed
    statistics by name, and the metric's details (BLEU: sacrebleu's BLEUScore fields,
    with equal values). `str()` reads as sacrebleu's."""

    name: str
    score: float
    signature: str
    stats: Dict[str, Optional[float]]
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
        timeout = checked_timeout(timeout)
        self.metric_spec = spec
        self._stack = ExitStack()
        self.source: StatsSource = open_source(spec, self._stack, timeout, jobs)

    @property
    def label(self) -> str:
        """The metric as it was named: its spec, or its command."""
        return self.metric_spec.spec

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
                    groups: Optional[Sequence[Sequence[str]]] = None) -> StatsTable:
        """The statistics rows of one system, one per segment, as a table that the
        reductions read: `table.score()`, `table.bootstrap(1000)`, ... Texts are
        scored as given, as sacrebleu's API scores them (an evaluator command, whose
        protocol strips them, warns when that changes a segment)."""
        segments = segment_references(hyps, refs, ref_streams)
        ids = checked_ids(ids, len(segments))
        tags = checked_groups(groups, len(segments))
        rows = corpus_rows(self.source, segments, {system: list(hyps)}, label=self.label)
        return StatsTable(self.label, self.source, rows, ids or [], tags,
                          nrefs=count_references(segments))

    def corpus_score(self, hyps: Sequence[str], refs: Optional[References] = None, *,
                     ref_streams: Optional[References] = None) -> Score:
        """The corpus score of hypotheses against their references: `refs` holds one
        list of references per segment; sacrebleu's layout (one list per reference,
        each as long as `hyps`) goes by keyword, as `ref_streams`."""
        table = self.stats_table(hyps, refs, ref_streams=ref_streams)
        for warning in self.input_warnings(hyps):
            warn(InputWarning(f"{self.label}: {warning}"))
        (result,) = analyse([table], Analysis())
        return self._score(result)

    def sentence_scores(self, hyps: Sequence[str], refs: Optional[References] = None, *,
                        ref_streams: Optional[References] = None) -> np.ndarray:
        """Each segment's own score, as sacrebleu's sentence_score gives it (BLEU with
        effective order)."""
        table = self.stats_table(hyps, refs, ref_streams=ref_streams)
        (scores,) = segment_scores([table])
        return scores.scores

    def pairwise_scores(self, hyps: Batches, refs: Optional[Batches] = None) -> np.ndarray:
        """Every hypothesis of each batch scored against every reference of the same
        batch, as sacrebleu's sentence_score scores one hypothesis against one reference
        (BLEU with effective order): `hyps` holds B batches of H strings, `refs` B
        batches of R strings, or None to score each batch's hypotheses against
        themselves (the candidates of minimum Bayes risk decoding). The result is a
        (B, H, R) float64 array: `a[b, h, r]` scores `hyps[b][h]` against
        `[refs[b][r]]`. BLEU, chrF, chrF++ and TER fill it with compiled kernels that
        read each string once; any other metric scores each pair as a segment of its
        own, exact but slower."""
        hyps, refs = checked_batches(hyps, refs)
        own = getattr(self.source, "pairwise_scores", None)
        return own(hyps, refs) if own is not None else all_pairs(self.source, hyps, refs)

    def score_stats(self, rows: np.ndarray) -> Score:
        """The corpus score of statistics rows (one per segment, an (n, k) array), summed
        row after row as sacrebleu sums them; or of one vector of k statistics (already
        summed, or a single segment's)."""
        table = StatsTable(self.label, self.source, {"system": self._checked_rows(rows)})
        (result,) = analyse([table], Analysis())
        return self._score(result)

    def _checked_rows(self, rows: Any) -> np.ndarray:
        """`rows` as an (n, k) float64 array, or a ValueError that says what shape was
        expected."""
        width = len(self.stat_names)
        try:
            array = np.asarray(rows, dtype=np.float64)
        except (TypeError, ValueError):
            array = np.empty((0, 0, 0))
        if array.ndim == 1:
            array = array[None, :]
        if array.ndim != 2 or (width and array.shape[1] != width):
            raise ValueError(f"{self.label} takes statistics as an (n, {width or 'k'}) array of "
                             f"rows or one vector of {width or 'k'} numbers ("
                             f"{' '.join(self.stat_names)}); got "
                             f"{_shape_of(rows)}")
        return array

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
            self._stack.__exit__(exc_type, *rest)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<evalproto.Metric {self.label!r}: {self.signature}>"


def _shape_of(rows: Any) -> str:
    shape = getattr(rows, "shape", None)
    if shape is None:
        try:
            shape = np.shape(rows)
        except ValueError:  # ragged
            return "rows of unequal lengths"
    return f"shape {tuple(shape)}"


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
        evaluator = registry.load(registry.spec_words(spec)[0]).from_options(**options)
        # An option the spec already sets to another value is an error, not a quiet
        # choice between the two.
        spec = registry.with_options(spec, _option_words(evaluator, options))
    registry.from_spec(spec)  # checked here, so that errors come before any work
    return Metric(MetricSpec(IN_PROCESS, spec), jobs, timeout)


def _option_words(evaluator: Any, options: Mapping[str, Any]
                  ) -> List[Tuple[str, Optional[str], str]]:
    """Python keyword options as with_options takes them: (option, value or None for a
    flag, how the caller wrote it)."""
    known = {param.name: param for param in type(evaluator).options
             if isinstance(param, click.Option)}
    words: List[Tuple[str, Optional[str], str]] = []
    for key, value in options.items():
        param = known[key]
        if param.is_flag:
            if value:
                words.append((param.opts[0], None, f"{key}=True"))
        elif value is not None:
            words.append((param.opts[0], str(value), f"{key}={value!r}"))
    return words


_REFERENCE_LISTS = {list, tuple}


def segment_references(hyps: Sequence[str], refs: Optional[References],
                       ref_streams: Optional[References]) -> References:
    """One list of references per segment, from either layout, checked: a string where
    a list belongs, lists of other lengths than the hypotheses (K streams passed as
    `refs`, the usual slip) and both layouts at once are errors that say what was
    expected. The texts are checked where they are scored (evalproto.base.items)."""
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
    if set(map(type, refs)) <= _REFERENCE_LISTS:  # the usual case: used as given, not copied
        return refs
    segments: List[Sequence[str]] = []
    for number, segment in enumerate(refs, 1):
        if isinstance(segment, (str, bytes)):
            raise TypeError(f"refs[{number - 1}] is of type {type(segment).__name__}; each "
                            f"entry of refs is a list of references, e.g. [ref] for one")
        segments.append(list(segment))
    return segments


def input_warnings(source: StatsSource, hyps: Sequence[str]) -> List[str]:
    """A source's warnings about a system's hypotheses (see Evaluator.input_warnings)."""
    check = getattr(source, "input_warnings", None)
    return list(check(hyps)) if check is not None else []


def count_references(refs: References) -> Union[int, str]:
    """References per segment, or "var" when it varies, as sacrebleu writes it."""
    counts = set(map(len, refs))
    return counts.pop() if len(counts) == 1 else "var"


def checked_ids(ids: Optional[Sequence[str]], segments: int) -> Optional[List[str]]:
    """Segment ids as a list, one per segment, or a TypeError/ValueError."""
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"ids must be a list of one id per segment, got {type(ids).__name__}")
    if len(ids) != segments:
        raise ValueError(f"ids has {len(ids)} entries for {segments} segments")
    return [str(segment_id) for segment_id in ids]


def checked_groups(groups: Optional[Sequence[Sequence[str]]], segments: int
                   ) -> Optional[List[List[str]]]:
    """Each segment's tags, as lists of str, one per segment, or a TypeError/ValueError
    that says what was expected (a str for a segment's tags would be read as its
    characters)."""
    if groups is None:
        return None
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence):
        raise TypeError(f"groups must be a list with one list of tags per segment, got "
                        f"{type(groups).__name__}")
    if len(groups) != segments:
        raise ValueError(f"groups has {len(groups)} entries for {segments} segments")
    checked = []
    for number, tags in enumerate(groups):
        if isinstance(tags, (str, bytes)) or not isinstance(tags, Sequence) or not all(
                isinstance(tag, str) for tag in tags):
            raise TypeError(f"groups[{number}] is {tags!r}; each entry of groups is a list "
                            f"of tags (str), e.g. [tag] for one, [] for none")
        checked.append(list(tags))
    return checked


# -- several systems and metrics -------------------------------------------------------

@dataclass
class Comparison:
    """Every (system, metric) result of a comparison, corpus first, then each group;
    and each segment's own scores when they were asked for."""

    results: List[Result]
    segments: List[SegmentScores] = field(default_factory=list)
    ids: Sequence[str] = field(default_factory=list)

    def to_dict(self) -> List[Dict[str, Any]]:
        """The results as records (the JSON Lines of corpus-score)."""
        return [result_record(result) for result in self.results]

    def to_pandas(self) -> Any:
        """One row per (system, metric[, group]): score, mean, ci, p_value, n, signature,
        baseline; a figure that is not there (no group, no interval) is NaN. pandas is
        an optional extra: pip install 'evalproto[pandas]'."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas() needs pandas, an optional extra: "
                              "pip install 'evalproto[pandas]'") from None
        columns = ["system", "metric", "group", "score", "mean", "ci", "p_value", "n",
                   "signature", "baseline"]
        frame = pandas.DataFrame([{column: getattr(result, column) for column in columns}
                                  for result in self.results], columns=columns)
        # One mark of a missing value, NaN, whatever the column and the pandas version
        # (an all-None column stayed None, a str column turned None into NaN).
        frame = frame.astype({"score": float, "mean": float, "ci": float, "p_value": float})
        frame["group"] = frame["group"].astype(object).where(frame["group"].notna(), np.nan)
        return frame

    def __str__(self) -> str:
        if self.segments:
            return format_segments(self.segments, self.ids, "text")
        return format_results(self.results, "text")


def compare(systems: Union[Mapping[str, Sequence[str]], Sequence[Sequence[str]]],
            refs: Optional[References] = None, *, ref_streams: Optional[References] = None,
            metrics: Sequence[MetricLike] = ("bleu",), confidence: Union[bool, int] = False,
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
    assert segments is not None  # there is a system
    analysis = analysis_of(confidence, paired, paired_n, seed, len(named))
    corpus = Corpus(segments, {name: list(hyps) for name, hyps in named.items()},
                    SegmentNumbers(len(segments)), checked_groups(groups, len(segments)))
    return score_corpus(corpus, given_metrics(metrics), analysis, jobs, timeout)


MetricLike = Union[str, MetricSpec, Metric]
"""A metric as the API takes it: a spec run in process ("bleu -tok intl"), a MetricSpec
(in process or a command), or a Metric from load(), used as it is."""


def given_metrics(metrics: Any) -> List[Union[MetricSpec, Metric]]:
    """The metrics a caller named, each as a MetricSpec or a loaded Metric; a
    TypeError or ValueError that says what was expected."""
    if isinstance(metrics, (str, MetricSpec, Metric)) or not isinstance(metrics, Sequence):
        raise TypeError(f"metrics must be a list of metric specs or Metrics, e.g. "
                        f"['bleu', 'chrf'] (for one: ['bleu']), got {type(metrics).__name__}")
    if not metrics:
        raise ValueError("no metric was given; name one or more, e.g. metrics=['bleu']")
    checked: List[Union[MetricSpec, Metric]] = []
    for metric in metrics:
        if isinstance(metric, str):
            checked.append(MetricSpec(IN_PROCESS, metric))
        elif isinstance(metric, (MetricSpec, Metric)):
            checked.append(metric)
        else:
            raise TypeError(f"a metric is a spec such as 'bleu', a MetricSpec or a Metric from "
                            f"load(), got {type(metric).__name__}")
    return checked


def spec_of(metric: Union[MetricSpec, Metric]) -> MetricSpec:
    """A metric's spec (a Metric's own), for what builds its own copies (a cluster)."""
    return metric.metric_spec if isinstance(metric, Metric) else metric


def analysis_of(confidence: Union[bool, int], paired: Optional[str], paired_n: Optional[int],
                seed: Optional[int], systems: int) -> Analysis:
    """An Analysis from compare()'s arguments, checked."""
    if paired not in (None, "bs", "ar", "ttest"):
        raise ValueError(f"paired is {paired!r}; expected 'bs' (paired bootstrap), 'ar' "
                         f"(approximate randomization), 'ttest' or None")
    default_n = {"bs": 1000, "ar": 10000}.get(paired or "", 0)
    analysis = Analysis(resamples=resamples_of(confidence), paired=paired,
                        paired_n=default_n if paired_n is None else count_of(paired_n,
                                                                             "paired_n"),
                        seed=seed)
    analysis.check_systems(systems)
    return analysis


def resamples_of(confidence: Union[bool, int]) -> int:
    """Bootstrap resamples for a `confidence` argument: True is sacrebleu's 1000, False
    (or 0) none, or a number of resamples."""
    if isinstance(confidence, bool):
        return 1000 if confidence else 0
    return 0 if confidence == 0 else count_of(confidence, "confidence")


def count_of(value: Any, name: str) -> int:
    """A whole number >= 1 given as argument `name`, or a TypeError/ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)


def score_corpus(corpus: Corpus, metrics: Sequence[MetricLike], analysis: Analysis,
                 jobs: int = 1, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 sentence_level: bool = False, progress: Progress = QUIET) -> Comparison:
    """Every system of a corpus under every metric, reduced as `analysis` asks (or
    segment by segment); the command line's corpus-score. Metrics already loaded are
    used as they are; the others are started here and stopped at the end."""
    with ExitStack() as stack:
        tables = corpus_tables(stack, corpus, metrics, jobs, timeout, progress,
                               ttest=analysis.paired == "ttest", narrow=True)
        return reduced(tables, analysis, sentence_level, progress)


def corpus_tables(stack: ExitStack, corpus: Corpus, metrics: Sequence[MetricLike], jobs: int,
                  timeout: Optional[float], progress: Progress, ttest: bool = False,
                  narrow: bool = False) -> List[StatsTable]:
    """One table per metric of every system of the corpus; the processes of the metrics
    started here stop when `stack` closes. With `ttest`, a metric the paired t-test
    does not apply to is refused before any segment is scored. With `narrow`, rows are
    held in the narrowest type that keeps them exact (for tables that only the
    reductions read, which take any type: ten million segments of BLEU in 500 MB, not
    4 GB)."""
    tables = []
    for metric in given_metrics(metrics):
        if isinstance(metric, Metric):
            source, label = metric.source, metric.label
        else:
            source, label = open_source(metric, stack, timeout, jobs), metric.spec
        if ttest:
            check_ttest(source, label)
        for system, hyps in corpus.systems.items():
            for warning in input_warnings(source, hyps):
                warn(InputWarning(f"{system}: {label}: {warning}"))
        rows = corpus_rows(source, corpus.refs, corpus.systems, progress, label=label,
                           narrow=narrow)
        tables.append(StatsTable(label, source, rows, corpus.ids, corpus.tags,
                                 nrefs=corpus.nrefs))
    return tables


def reduced(tables: Sequence[StatsTable], analysis: Analysis, sentence_level: bool,
             progress: Progress) -> Comparison:
    if sentence_level:
        return Comparison([], segment_scores(tables), tables[0].ids)
    return Comparison(analyse(tables, analysis, progress), ids=tables[0].ids)


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


def group_corpus(corpus: Corpus, groups: Optional[str]) -> None:
    """Group the corpus's segments by the `groups` file, or by a dataset's own tags
    (none when no segment has a tag)."""
    if groups is not None:
        corpus.tags = read_groups(groups, corpus.ids)
    elif corpus.tags is not None and not any(corpus.tags):
        corpus.tags = None


def _warn_of_json_lines(paths: Sequence[str], files: Sequence[Sequence[str]]) -> None:
    """An InputWarning for each text file whose every line is a JSON object."""
    for path, lines in zip(paths, files):
        if looks_like_json_lines(lines):
            warn(InputWarning(f"{path}: every line is a JSON object, but the file is read as "
                              f"plain text, one segment per line: if it is a dataset or "
                              f"predictions, give its format with `data_format` (dynabench "
                              f"or oasst)"))


def read_dataset(data_format: Optional[str], ref_paths: Sequence[str],
                 hyp_paths: Sequence[str], ref_field: str = "answer", hyp_field: str = "pred",
                 progress: Progress = QUIET, names: Optional[Sequence[str]] = None) -> Corpus:
    """A corpus from text files (references first; `data_format` "text"), or a JSON
    Lines dataset with its prediction files ("dynabench", "oasst"). None reads text,
    with an InputWarning for a file whose every line is a JSON object (a dataset read
    as text by mistake). `names` names the systems, one per hypothesis file (by
    default, the files' paths name them)."""
    if data_format is None or data_format == "text":
        corpus = read_corpus(ref_paths, hyp_paths, progress)
        if data_format is None:
            _warn_of_json_lines([*ref_paths, *hyp_paths],
                                [*cast(SegmentReferences, corpus.refs).columns,
                                 *corpus.systems.values()])
    elif len(ref_paths) != 1:
        raise UsageProblem(f"`data_format` {data_format} takes one dataset file, then the "
                           f"prediction files")
    elif data_format == "dynabench":
        from evalproto.readers import datasets  # here: plain text, the usual input, needs none

        corpus = datasets.read_dynabench(ref_paths[0], hyp_paths, ref_field, hyp_field)
    elif data_format == "oasst":
        from evalproto.readers import datasets

        corpus = datasets.read_oasst(ref_paths[0], hyp_paths, hyp_field)
    else:
        raise ValueError(f"unknown data format {data_format!r}; expected text, dynabench or "
                         f"oasst")
    if names is not None:
        if len(names) != len(corpus.systems):
            raise UsageProblem(f"{len(names)} names for {len(corpus.systems)} systems"
                               + (" (standard input's tab-separated columns are one each)"
                                  if len(corpus.systems) != len(hyp_paths) else ""))
        corpus.systems = dict(zip(names, corpus.systems.values()))
    return corpus
