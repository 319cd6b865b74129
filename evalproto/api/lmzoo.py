"""LM Zoo predictions files (`get_predictions.hdf5`) for lm-score and lm-compare: the
file as a table of token rows, with what the model's other outputs add (its spec to the
signature, unkify's unknown tokens, tokenize's check, the original text's words), and
two models' files on the same tokens paired for the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from evalproto.base.errors import InputError, UsageProblem
from evalproto.base.progress import QUIET, Progress
from evalproto.metrics.lm import LMZooPredictions
from evalproto.readers import lmzoo
from evalproto.readers.predictions import LOG_BASES, Predictions, read_predictions
from evalproto.readers.words import TokenRules, Word, word_groups
from evalproto.reports import lm as lm_reports
from evalproto.stats.table import StatsTable, group_rows


@dataclass(frozen=True)
class ZooOptions:
    """How to read a predictions file: the base of its logarithms ("2", "e", "10"), the
    predictions a `wc` log would hold per token (`candidates`), and the model's other
    outputs, by path: its `spec`, `unkify` flags (`skip_unk` leaves those tokens out),
    `tokenize` output (checked against the file's tokens) and the original `text`
    (needed for words)."""

    log_base: str = "e"
    candidates: int = 100
    spec: Optional[str] = None
    unkify: Optional[str] = None
    skip_unk: bool = False
    tokenize: Optional[str] = None
    text: Optional[str] = None

    def __post_init__(self) -> None:
        if self.log_base not in LOG_BASES:
            raise UsageProblem(f"`log_base` is {self.log_base!r}; expected 2, e or 10")
        if isinstance(self.candidates, bool) or not isinstance(
                self.candidates, (int, np.integer)) or self.candidates < 1:
            raise UsageProblem(f"`candidates` must be a whole number >= 1, got "
                               f"{self.candidates!r}")
        if self.skip_unk and self.unkify is None:
            raise UsageProblem("`skip_unk` needs the model's unkify output (`unkify`)")

    @property
    def files(self) -> List[str]:
        """The model's outputs given beside the predictions file, by option."""
        return [f"`{option}`" for option, value in (
            ("spec", self.spec), ("unkify", self.unkify), ("tokenize", self.tokenize),
            ("text", self.text)) if value is not None]


@dataclass
class ZooTable:
    """A predictions file's table (units: sentences; groups: sentences, or words with
    `by` "word"), the predictions it was made of, and its words by label."""

    table: StatsTable
    predictions: Predictions
    words: Dict[str, Word] = field(default_factory=dict)

    def word_records(self) -> List[Dict[str, Any]]:
        """Each word's record (lm-score --by word): its tokens' rows summed."""
        rows = self.table.rows[self.table.label]
        metric: Any = self.table.metric
        return [lm_reports.word_summary(self.table.label, self.words[label],
                                        rows[picked].sum(axis=0), metric)
                for label, picked in group_rows(self.table.groups or []).items()]


def zoo_table(path: str, options: ZooOptions = ZooOptions(), skip_first_token: bool = False,
              by: Optional[str] = None, progress: Progress = QUIET) -> ZooTable:
    """A predictions file as a table, with the options' files read and checked against
    it; `by` "word" groups the rows by word (it needs the text)."""
    if by == "word" and options.text is None:
        raise UsageProblem("`by` word needs the original sentences (`text`), to find the "
                           "words in")
    if by != "word" and options.text is not None:
        raise UsageProblem("`text` gives the sentences to find words in: it goes with "
                           "`by` word")
    predictions = read_predictions(path, options.log_base, options.candidates,
                                   skip_first_token, progress)
    signed = [("vocab", str(len(predictions.vocabulary)))]
    rules = TokenRules()
    if options.spec is not None:
        spec = lmzoo.read_spec(options.spec)
        spec.check(predictions)
        signed = [*spec.signed(), *signed]
        rules = TokenRules(spec.cased, spec.unk_types, spec.special_types)
    unknown = np.zeros(len(predictions.rows), dtype=bool)
    if options.unkify is not None:
        unknown = lmzoo.read_unknown(options.unkify, predictions)
        predictions.mark_unknown(unknown)
        if options.skip_unk:
            predictions.leave_out(unknown)
    if options.tokenize is not None:
        lmzoo.check_tokens(options.tokenize, predictions)
    skipped = [name for name, skips in (("first", skip_first_token),
                                        ("unk", options.skip_unk)) if skips]
    if skipped:
        signed.append(("skip", "+".join(skipped)))
    metric = LMZooPredictions(options.log_base, options.candidates, signed,
                              options.unkify is not None, bool(skipped))
    units = predictions.units()
    groups: List[List[str]] = [[sentence] for sentence in units]
    words: Dict[str, Word] = {}
    if by == "word":
        lines = lmzoo.read_sentences(str(options.text), predictions)
        groups, words = word_groups(
            [(str(i), predictions.tokens(i), unknown[predictions.starts[i]:
                                                     predictions.starts[i + 1]].tolist(),
              line, f"{options.text}: line {i + 1} (sentence {i} of {path})")
             for i, line in enumerate(lines)], rules)
    table = StatsTable(path, metric, {path: predictions.rows}, units=units, groups=groups,
                       group_key="word" if by == "word" else "sentence")
    return ZooTable(table, predictions, words)


def paired_table(baseline: ZooTable, other: ZooTable) -> StatsTable:
    """The two models' rows side by side ("baseline", "log"), resampled by sentence; the
    files must hold the same tokens, sentence by sentence."""
    first, second = baseline.predictions, other.predictions
    if first.sentences != second.sentences:
        raise InputError(f"{first.path} has {first.sentences} sentences, but {second.path} "
                         f"has {second.sentences}: not predictions of the same sentences")
    for sentence in range(first.sentences):
        ours, theirs = first.tokens(sentence), second.tokens(sentence)
        at = lmzoo.first_difference(ours, theirs)
        if at is not None:
            raise InputError(
                f"{first.path} and {second.path} hold different tokens, first in sentence "
                f"{sentence} (token {at}: {_token(ours, at)} and {_token(theirs, at)}); "
                f"paired tests compare two models on the same tokens")
    return StatsTable(baseline.table.label, baseline.table.metric,
                      {"baseline": first.rows, "log": second.rows},
                      units=baseline.table.units)


def _token(tokens: List[str], at: int) -> str:
    return repr(tokens[at]) if at < len(tokens) else "the sentence's end"
