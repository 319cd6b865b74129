"""sacrebleu's BLEU, chrF and TER as evalproto evaluators: built from sacrebleu's
options, scored and signed as sacrebleu scores and signs them."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

import evalproto
from evalproto.api import commandline as api
from evalproto.cli.metric_flags import options_for
from evalproto.cli.sacrebleu.output import LOG, fail
from evalproto.cli.sacrebleu.parser import LANGUAGE_TOKENIZERS, VERSION

TER_SHORT_KEYS = {"case": "c", "tok": "t", "norm": "nr", "punct": "pn", "asian": "as"}
SIGNATURE_KEYS = {"BLEU": ("case", "eff", "tok", "smooth"),
                  "CHRF": ("case", "eff", "nc", "nw", "space"),
                  "TER": ("case", "tok", "norm", "punct", "asian")}
"""The metric's part of sacrebleu's signature; evaluators may add fields (chrF's beta)
that sacrebleu leaves out."""


@dataclass
class Resampling:
    """The data's part of a signature: bootstrap resamples, AR trials, seed."""

    bs: Optional[int] = None
    ar: Optional[int] = None
    seed: Optional[str] = None


class DropInMetric:
    """One of sacrebleu's metrics, computed by an evalproto evaluator."""

    def __init__(self, key: str, spec: str) -> None:
        self.key = key  # sacrebleu's name for the metric class: BLEU, CHRF, TER
        self.metric = evalproto.load(spec)
        self.name = self.metric.name  # the score's name: BLEU, chrF2, chrF2++, TER
        self.nrefs = 0  # references per segment, as the signature says

    def rows(self, refs: Sequence[Sequence[str]], hyps: Sequence[str]) -> np.ndarray:
        """One row of statistics per segment; `refs` holds one list per reference. Text
        is scored as sacrebleu reads it, leading whitespace kept."""
        table = self.metric.stats_table(hyps, ref_streams=refs)
        return table.rows["system"]

    def warn_if_tokenized(self, hyps: Sequence[str]) -> None:
        """sacrebleu's warning, in its words, where the evaluator finds the input looks
        tokenized (BLEU without --force: 100 hypotheses or more end in " .")."""
        if self.metric.input_warnings(hyps):
            LOG.warning("That's 100 lines that end in a tokenized period ('.')")
            LOG.warning("It looks like you forgot to detokenize your test data, which may "
                        "hurt your score.")
            LOG.warning("If you insist your data is detokenized, or don't care, you can "
                        "suppress this message with the `force` parameter.")

    def score(self, rows: np.ndarray) -> Tuple[float, str]:
        """The corpus score of the rows, and the details sacrebleu prints after it."""
        score = self.metric.score_stats(rows)
        return score.score, score.verbose

    def table(self, systems: Dict[str, np.ndarray]) -> Any:
        """The systems' rows as a table for evalproto's reductions."""
        return evalproto.StatsTable(self.name, self.metric.source, systems)

    def signature(self, short: bool, resampled: Optional[Resampling] = None) -> str:
        """sacrebleu's signature: nrefs, resampling, the metric's settings, version."""
        settings = self.metric.source.signature_fields()
        signature = api.Signature.of(
            [("nrefs", self.nrefs)],
            [(key, value) for key, value in vars(resampled or Resampling()).items()
             if value is not None],
            [(key, settings[key]) for key in SIGNATURE_KEYS[self.key]],
            [("version", VERSION)])
        if not short:
            return signature.text()
        return signature.text({**api.SIGNATURE_SHORT_KEYS,
                               **(TER_SHORT_KEYS if self.key == "TER" else {})})


def make_metrics(args: argparse.Namespace, nrefs: int) -> Dict[str, DropInMetric]:
    """The metrics of -m, keyed and ordered as sacrebleu's dict of them (a repeated
    metric is built again, with its warnings, and keeps its first place)."""
    metrics: Dict[str, DropInMetric] = {}
    for name in args.metrics:
        metric = {"bleu": make_bleu, "chrf": make_chrf, "ter": make_ter}[name](
            args, args.sentence_level)
        metric.nrefs = nrefs
        metrics[metric.key] = metric
    return metrics


def metric_spec(metric: str, args: argparse.Namespace, **settled: Any) -> str:
    """The evalproto spec of one of sacrebleu's metrics: its options as sacrebleu's
    arguments give them (evalproto.cli.metric_flags), with the values `settled` here
    (by argparse destination) in place of the arguments'."""
    return api.with_options(metric, options_for(metric, {**vars(args), **settled}))


def make_bleu(args: argparse.Namespace, sentence_level: bool) -> DropInMetric:
    """BLEU with sacrebleu's options, its tokenizer by target language (-l), its advice
    when -tok contradicts the language, and effective order at sentence level."""
    target = args.langpair.split("-")[1] if args.langpair else ""
    tokenizer = args.bleu_tokenize
    if tokenizer is None:
        tokenizer = LANGUAGE_TOKENIZERS.get(target, "13a")
    else:
        for language, advice in (("zh", "'zh' or 'spm'"), ("ja", "'ja-mecab' or 'spm'"),
                                 ("ko", "'ko-mecab' or 'spm'")):
            if target == language and tokenizer != LANGUAGE_TOKENIZERS[language]:
                name = {"zh": "Chinese", "ja": "Japanese", "ko": "Korean"}[language]
                LOG.warning(f"Consider using the {advice} tokenizer for {name}.")
    if tokenizer not in ("none", "zh", "13a", "intl", "char", "ja-mecab", "ko-mecab"):
        raise fail(f"The {tokenizer} tokenizer needs a SentencePiece model that sacrebleu "
                   f"downloads; evalproto's BLEU does not have it.")
    spec = metric_spec("bleu", args, bleu_tokenize=tokenizer)
    if sentence_level:  # sacrebleu turns effective order on for sentence BLEU
        spec += " --effective-order"
    return DropInMetric("BLEU", spec)


def make_chrf(args: argparse.Namespace, sentence_level: bool) -> DropInMetric:
    """chrF with the --chrf-* options; named chrF<beta> with a + per word order."""
    # beta enters only squared: sacrebleu's chrF-1 is evalproto's chrf --beta 1
    metric = DropInMetric("CHRF", metric_spec("chrf", args, chrf_beta=abs(args.chrf_beta)))
    metric.name = f"chrF{args.chrf_beta}" + "+" * args.chrf_word_order  # with its sign
    return metric


def make_ter(args: argparse.Namespace, sentence_level: bool) -> DropInMetric:
    """TER with the --ter-* options."""
    return DropInMetric("TER", metric_spec("ter", args))



def seed_setting() -> Tuple[str, Optional[int]]:
    """SACREBLEU_SEED as sacrebleu reads it: the text its signatures show, and the seed
    ('none' for an unseeded run)."""
    text = os.environ.get("SACREBLEU_SEED", "12345")
    return text, None if text.lower() == "none" else int(text)
