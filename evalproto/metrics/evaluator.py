"""The Evaluator SDK: a metric is `stats(refs, hyp) -> vector` plus `score(vector) -> float`.

A subclass declares its name, direction, stat names and options; in return it can be
served as a console script, named in `evalproto corpus-score -m`, bootstrapped and
grouped, because all of those only ever sum its rows and call `score`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
from abc import ABC, abstractmethod
from functools import lru_cache
from typing import Any, ClassVar, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import click
import numpy as np

from evalproto.base.errors import EvaluatorError, SpecError
from evalproto.base.items import Item, checked_item, checked_items
from evalproto.base.version import __version__
from evalproto.metrics.signature import Signature
from evalproto.wire.protocol import PROTOCOL_VERSION, RequestError
from evalproto.wire.server import console_command

REFERENCE_CACHE_SIZE = 1024
"""How many reference sets an evaluator keeps preprocessed. Scoring goes segment by
segment across systems, and tuners send a segment's n-best list together, so the same
references come back to back and a small cache gets every hit at little memory."""


class Evaluator(ABC):
    """Base class of every metric.

    Subclasses set `name`, `higher_is_better` and `options` (click options, declared
    once for both `NAME-evaluator --opt` and `-m "NAME --opt"`), set `stat_names` in
    `__init__` (which receives the parsed options as keyword arguments), and implement
    `stats` and `score`.
    """

    name: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = True
    options: ClassVar[Sequence[click.Parameter]] = ()
    stat_names: Tuple[str, ...] = ()
    resample_dtype: ClassVar[type] = np.float64
    """The type that bootstrap resamples are summed in before they are scored. sacrebleu
    sums them in float32, so its metrics (BLEU, chrF, TER) ask for float32 to give its
    confidence intervals and p-values to the bit; `score` must then accept float32
    scalars and compute with them as sacrebleu does."""
    extra_decimals: int = 0
    """Decimals that reports show beyond what `-w` asks of a percentage: 0 for a score
    on a 0-100 scale (BLEU, TER), 2 for a fraction (WER), so that `-w 1` shows 0.609
    where a percentage would show 60.9, and two systems that differ at that detail
    never print the same."""
    mean_of_rows: ClassVar[bool] = False
    """Whether the corpus score is the mean of the scores of the segments' own rows
    (exact match, SQuAD, segment scores imported from elsewhere), rather than a function
    of summed statistics (BLEU). Only then do tests on segment scores, such as the paired
    t-test, test the corpus score."""

    @abstractmethod
    def stats(self, refs: Sequence[str], hyp: str) -> Sequence[float]:
        """The additive sufficient statistics of one segment, one per stat name."""

    @abstractmethod
    def score(self, vector: np.ndarray) -> float:
        """The metric for a summed vector of statistics (a float64 row, or a float32 row
        of a bootstrap resample; see `resample_dtype`)."""

    def read_references(self, refs: Tuple[str, ...]) -> Any:
        """What `stats` needs from one segment's references (tokens, n-gram counts),
        computed once per distinct set: `references` caches it. A metric that
        preprocesses its references overrides this; the default keeps them as given."""
        return refs

    def references(self, refs: Sequence[str]) -> Any:
        """`read_references` of these references, from a cache of the last
        REFERENCE_CACHE_SIZE sets. The base class owns the cache (one per evaluator,
        shared by its `with_changes` copies), so that no metric wires its own."""
        return self._references_cache()(tuple(refs))

    def _references_cache(self) -> Any:
        cached = self.__dict__.get("_reference_cache")
        if cached is None:
            cached = lru_cache(maxsize=REFERENCE_CACHE_SIZE)(self.read_references)
            self._reference_cache = cached
        return cached

    @property
    def score_name(self) -> str:
        """The score's name in reports, as sacrebleu names it (BLEU, chrF2++, TER)."""
        return self.name

    def details(self, vector: np.ndarray) -> Dict[str, Any]:
        """What else a summed vector says, beside the score (BLEU: its precisions and
        brevity penalty, with sacrebleu's BLEUScore names and values)."""
        return {}

    def verbose_score(self, vector: np.ndarray) -> str:
        """The details as sacrebleu prints them after the score ("" if it prints none)."""
        return ""

    def input_warnings(self, hyps: Sequence[str]) -> List[str]:
        """What looks wrong with a whole system's hypotheses for this metric, in words
        (BLEU: lines that end in a tokenized period, as sacrebleu warns). Corpus scoring
        shows each as a warning; the protocol server, which never sees a whole system,
        does not ask."""
        return []

    def signature_fields(self) -> Dict[str, Any]:
        """The settings that make two scores comparable, in signature order. By default
        the metric's name and the value of each declared option it was built with
        (`metric:word-recall|lowercase:yes`); a metric whose scores depend on anything
        else, or that writes its settings as sacrebleu does, says so here."""
        given = self.__dict__.get("_options_given", {})
        return {"metric": self.name, **{param.name: given[param.name]
                                        for param in type(self).options
                                        if param.name in given}}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every subclass's __init__ records the options it was called with (defaults
        included), for the default signature, however the evaluator is built."""
        super().__init_subclass__(**kwargs)
        if "__init__" in vars(cls):
            cls.__init__ = _recording_options(cls.__init__)  # type: ignore[method-assign]

    def signature(self) -> str:
        """A sacrebleu-style signature, `key:value|...|version:evalproto-X`; reports put
        the data's part (`nrefs`, resampling) in front."""
        return str(Signature.of(self.signature_fields(),
                                {"version": f"evalproto-{__version__}"}))

    @classmethod
    def describe(cls) -> str:
        """The first line of the class docstring, for help texts and `evalproto list`."""
        return (cls.__doc__ or "").strip().split("\n")[0]

    def info(self) -> Dict[str, Any]:
        """The INFO reply: what a client needs to check and label our replies, and to
        show our scores as in process (their name, their decimals)."""
        return {
            "name": self.name,
            "stats": list(self.stat_names),
            "higher_is_better": self.higher_is_better,
            "signature": self.signature(),
            "protocol": PROTOCOL_VERSION,
            "score_name": self.score_name,
            "extra_decimals": self.extra_decimals,
        }

    # -- what a row can be ------------------------------------------------------------

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """The rules that every row of this metric obeys, each as (a mask of the rows of a
        (n, k) array that break it, the rule in words, e.g. "correct_2 <= total_2").
        A segment's own row obeys them all; with `summed`, give only those that every
        sum of such rows obeys too. The server checks EVAL vectors against them and
        `reduce` every row of a stats file, so that impossible statistics never become
        a score. Statistics must be finite; metrics add their own rules."""
        yield ~np.isfinite(rows).all(axis=1), "every statistic is a finite number"

    def broken_rule(self, rows: np.ndarray, summed: bool = False) -> Optional[Tuple[int, str]]:
        """The first row of `rows` that breaks one of `rules`, with the rule; or None."""
        rows = np.asarray(rows, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            for broken, rule in self.rules(rows, summed):
                found = np.flatnonzero(broken)
                if len(found):
                    return int(found[0]), rule
        return None

    # -- checked entry points ---------------------------------------------------------

    def checked_stats(self, refs: Sequence[str], hyp: str) -> Tuple[float, ...]:
        """`stats` of one segment (checked as evalproto.base.items checks it), checked
        to be the declared number of finite numbers."""
        refs, hyp = checked_item(refs, hyp)
        row = tuple(float(value) for value in self.stats(refs, hyp))
        if len(row) != len(self.stat_names):
            raise RuntimeError(
                f"{type(self).__name__}.stats returned {len(row)} numbers, "
                f"but the evaluator declares {len(self.stat_names)} stats")
        if not all(math.isfinite(value) for value in row):
            raise ValueError(f"the statistics are not all finite: {row}")
        return row

    def checked_score(self, vector: Sequence[float]) -> float:
        """`score` of a vector of the declared length that is a possible sum of this
        metric's rows, on a private copy of it."""
        if len(vector) != len(self.stat_names):
            raise RequestError(
                f"EVAL needs {len(self.stat_names)} numbers "
                f"({' '.join(self.stat_names)}), got {len(vector)}")
        summed = np.array(vector, dtype=np.float64)
        broken = self.broken_rule(summed[None, :], summed=True)
        if broken is not None:
            raise RequestError(f"these numbers are not a possible sum of {self.name} "
                               f"statistics: they break {broken[1]}")
        value = float(self.score(summed))
        if not math.isfinite(value):
            raise ValueError(f"the score of this vector is not finite ({value})")
        return value

    def stats_many(self, items: Iterable[Item]) -> np.ndarray:
        """One row of statistics per (refs, hyp) item, as a float64 array of shape (n, k).
        Items are checked, and scored as given (see evalproto.base.items)."""
        items = checked_items(items)
        try:
            rows = self.stats_batch(items)
        except EvaluatorError:
            raise
        except Exception:
            self._stats_one_by_one(items)  # to name the item that fails
            raise
        return np.asarray(rows, dtype=np.float64).reshape(len(items), len(self.stat_names))

    def stats_batch(self, items: Sequence[Item]) -> np.ndarray:
        """The rows of many items. This default computes them one by one; a metric that
        counts faster in bulk overrides it, with rows equal to `stats`'."""
        return self._stats_one_by_one(items)

    def _stats_one_by_one(self, items: Sequence[Item]) -> np.ndarray:
        rows = []
        for item, (refs, hyp) in enumerate(items):
            try:
                row = [float(value) for value in self.stats(refs, hyp)]
            except Exception as exc:
                raise EvaluatorError(f"evaluator {self.name!r} failed: {exc}", item) from exc
            if len(row) != len(self.stat_names):
                raise EvaluatorError(
                    f"evaluator {self.name!r} failed: {type(self).__name__}.stats returned "
                    f"{len(row)} numbers, but the evaluator declares {len(self.stat_names)} "
                    f"stats", item)
            if not all(map(math.isfinite, row)):
                raise EvaluatorError(f"evaluator {self.name!r} failed: the statistics are "
                                     f"not all finite: {row}", item)
            rows.append(row)
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(self.stat_names))

    def score_many(self, vectors: np.ndarray) -> np.ndarray:
        """The score of each row of a (k, d) array of summed statistics. A float32 array
        (bootstrap resamples, see `resample_dtype`) is scored row by row in float32, as
        sacrebleu scores its resamples; anything else in float64."""
        vectors = np.asarray(vectors)
        if vectors.dtype != np.float32:
            vectors = vectors.astype(np.float64)
        if vectors.ndim != 2 or vectors.shape[1] != len(self.stat_names):
            raise RequestError(f"{self.name} scores vectors of {len(self.stat_names)} "
                               f"numbers ({' '.join(self.stat_names)}), got an array of "
                               f"shape {vectors.shape}")
        broken = self.broken_rule(vectors, summed=True)
        if broken is not None:
            raise ValueError(f"not a possible sum of {self.name} statistics: it breaks "
                             f"{broken[1]}")
        # float32 resamples keep float32 scores: sacrebleu averages them so
        scores = np.array([self.score(vector) for vector in vectors])
        infinite = np.flatnonzero(~np.isfinite(scores))
        if len(infinite):  # as over the protocol: no score is a NaN or an infinity
            first = int(infinite[0])
            raise EvaluatorError(f"evaluator {self.name!r} failed: the score of these "
                                 f"statistics is not a finite number ({scores[first]})", first)
        return scores

    # -- variants and life cycle -----------------------------------------------------

    def for_sentences(self) -> Evaluator:
        """The evaluator that scores one segment on its own, as sacrebleu's sentence
        scores (`-sl`) do. Most metrics score a segment as a corpus of one; BLEU turns
        on its effective order there."""
        return self

    def with_changes(self, **attributes: Any) -> Evaluator:
        """A copy with some settings changed that leave the references' reading as it
        is: the copy shares the reference cache."""
        changed = copy.copy(self)  # without the cache: see __getstate__
        vars(changed).update(attributes, _reference_cache=self._references_cache())
        return changed

    def __getstate__(self) -> Dict[str, Any]:
        """The settings without the reference cache, which a copy in another process
        fills again."""
        state = dict(vars(self))
        state.pop("_reference_cache", None)
        return state

    def close(self) -> None:  # noqa: B027 (a hook with nothing to do by default)
        """Nothing to release in process; here so evaluators and processes are used alike."""

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @classmethod
    def from_args(cls, args: Sequence[str] = ()) -> Evaluator:
        """Build an instance from command-line style options, e.g. ["--tokenize", "intl"]."""
        command = click.Command(cls.name, params=list(cls.options))
        context = command.make_context(cls.name, list(args))
        return cls(**context.params)

    @classmethod
    def from_options(cls, **options: Any) -> Evaluator:
        """Build an instance from Python keyword options, e.g. tokenize="intl", checked
        as the command line checks them: an unknown option or a bad value says what was
        expected."""
        known = {param.name: param for param in cls.options if isinstance(param, click.Option)}
        args = []
        for key, value in options.items():
            param = known.get(key)
            if param is None:
                raise TypeError(f"{cls.name} has no option {key!r}; its options are "
                                f"{', '.join(known) or 'none'}")
            if param.is_flag:
                if not isinstance(value, bool):
                    raise TypeError(f"{cls.name} option {key!r} is a flag: True or False, "
                                    f"got {value!r}")
                args += [param.opts[0]] if value else []
            elif value is not None:
                args += [param.opts[0], str(value)]
        try:
            return cls.from_args(args)
        except click.UsageError as exc:
            raise SpecError(f"{cls.name}: {exc.format_message()}") from None

    @classmethod
    def main(cls, argv: Optional[Sequence[str]] = None) -> None:
        """Console-script entry point: serve this evaluator over stdin/stdout."""
        console_command(cls).main(args=argv,  # type: ignore[arg-type]
                                  prog_name=f"{cls.name}-evaluator")


def _recording_options(init: Any) -> Any:
    """`init`, recording its arguments by name before it runs (the outermost call of a
    chain of super().__init__ calls records them: the class the caller built)."""
    parameters = inspect.signature(init)

    @functools.wraps(init)
    def recording(self: Evaluator, *args: Any, **kwargs: Any) -> None:
        if "_options_given" not in self.__dict__:
            try:
                bound = parameters.bind(self, *args, **kwargs)
            except TypeError:
                bound = None  # init itself raises the error that explains
            if bound is not None:
                bound.apply_defaults()
                self.__dict__["_options_given"] = dict(list(bound.arguments.items())[1:])
        init(self, *args, **kwargs)

    return recording


class CountsEvaluator(Evaluator):
    """A metric whose statistics are counts (whole numbers >= 0)."""

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        yield from super().rules(rows, summed)
        yield ((rows < 0) | (rows != np.trunc(rows))).any(axis=1), \
            "every statistic is a count (a whole number >= 0)"
