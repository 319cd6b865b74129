"""`evalproto sacrebleu ARGS...`: sacrebleu 2.x's command line, scored by evalproto.

It takes sacrebleu's arguments and prints what `sacrebleu ARGS...` (2.6.0) prints, byte
for byte, but for the version in signatures (`version:evalproto-X`): the same text,
JSON and LaTeX, tables, messages on stderr, usage errors and exit codes. The figures are
evalproto's: each metric's statistics come from an evalproto evaluator (one row per
segment), and every score, interval and p-value is a reduction over those rows with
evalproto's resampling (sacrebleu's random draws).

The figures print exactly as sacrebleu's because evalproto's are sacrebleu's to the
bit: its evaluators score summed statistics with sacrebleu's float operations in its
order, and its bootstrap sums resamples in float32 and scores them as sacrebleu does
(see evalproto.stats.resampling). Text is read as sacrebleu reads it, keeping a line's
leading whitespace, and scored as given, as everywhere in process.

Test sets (-t, -l, --echo, --download, --list) are read with sacrebleu's dataset module
from its local cache; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import gzip
import importlib
import io
import json
import logging
import multiprocessing
import os
import re
import signal
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import click
import numpy as np
from tabulate import tabulate

import evalproto
from evalproto.api import commandline as api
from evalproto.cli.metric_flags import options_for


def _sacrebleu(module: str) -> Any:
    """A module of sacrebleu, imported only where it is needed (test sets, --list): the
    `evalproto` command imports this module for every subcommand, and importing
    sacrebleu's datasets costs a few tens of milliseconds."""
    return importlib.import_module(f"sacrebleu.{module}")


VERSION = f"evalproto-{evalproto.__version__}"
"""What signatures say where sacrebleu's say 2.6.0."""

METRIC_NAMES = ["bleu", "chrf", "ter"]
TOKENIZERS = ["none", "zh", "13a", "intl", "char", "ja-mecab", "ko-mecab", "spm",
              "flores101", "flores200", "spBLEU-1K"]
"""sacrebleu 2.6.0's BLEU tokenizers, in its order (its usage line shows them). The last
four need a SentencePiece model that sacrebleu downloads; evalproto's BLEU has none."""
SMOOTH_DEFAULTS: Dict[str, Optional[float]] = {"none": None, "floor": 0.1, "add-k": 1,
                                               "exp": None}
LANGUAGE_TOKENIZERS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
"""sacrebleu's default BLEU tokenizer for a target language (-l); 13a for any other."""
OUTPUT_FORMATS = ["json", "text", "latex"]
PAIRED_DEFAULTS = {"bs": 1000, "ar": 10000}

COLOR_CODES = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m",
               "cyan": "\x1b[36m"}
COLOR_RESET = "\x1b[0m"

Number = Union[float, np.floating]


# -- the command line -------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """sacrebleu 2.6.0's argument parser: the same options in the same order, with the
    same help, so that usage errors, -h and exit codes are sacrebleu's."""
    parser = argparse.ArgumentParser(
        prog="sacrebleu",
        description="sacreBLEU: Hassle-free computation of shareable BLEU scores.\n"
                    "Quick usage: score your detokenized output against WMT'14 EN-DE:\n"
                    "    cat output.detok.de | sacrebleu -t wmt14 -l en-de",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--citation", "--cite", default=False, action="store_true",
        help="Dump the bibtex citation and quit.")
    add("--list", default=False, action="store_true",
        help="Print a list of all available test sets.")
    add("--test-set", "-t", type=str, default=None,
        help="The test set to use (see also --list) or a comma-separated list of test "
             "sets to be concatenated.")
    add("--language-pair", "-l", dest="langpair", default=None,
        help="Source-target language pair (2-char ISO639-1 codes).")
    add("--origlang", "-ol", dest="origlang", default=None,
        help='Use a subset of sentences with a given original language (2-char ISO639-1 '
             'codes), "non-" prefix means negation.')
    add("--subset", dest="subset", default=None,
        help="Use a subset of sentences whose document annotation matches a given regex "
             "(see SUBSETS in the source code).")
    add("--download", type=str, default=None, help="Download a test set and quit.")
    add("--echo", nargs="+", type=str, default=None,
        help="Output the source (src), reference (ref), or other available field (docid, "
             "ref:A, ref:1 for example) to STDOUT and quit. You can get available fields "
             "with options `--list` and `-t`For example: `sacrebleu -t wmt21 --list`. If "
             "multiple fields are given, they are outputted with tsv format in the order "
             "they are given.You can also use `--echo all` to output all available "
             "fields.")
    add("--input", "-i", type=str, nargs="*", default=None,
        help="Read input from file(s) instead of STDIN.")
    add("refs", nargs="*", default=[],
        help="Optional list of references. If given, it should preceed the -i/--input "
             "argument.")
    add("--num-refs", "-nr", type=int, default=1,
        help="Split the reference stream on tabs, and expect this many references. "
             "(Default: %(default)s)")
    add("--encoding", "-e", type=str, default="utf-8",
        help="Open text files with specified encoding (Default: %(default)s)")
    add("--metrics", "-m", choices=METRIC_NAMES, nargs="+", default=["bleu"],
        help="Space-delimited list of metrics to compute (Default: bleu)")
    add("--sentence-level", "-sl", action="store_true",
        help="Compute metric for each sentence.")

    bleu = parser.add_argument_group("BLEU related arguments").add_argument
    bleu("--smooth-method", "-s", choices=SMOOTH_DEFAULTS.keys(), default="exp",
         dest="bleu_smooth_method",
         help="Smoothing method: exponential decay, floor (increment zero counts), add-k "
              "(increment num/denom by k for n>1), or none. (Default: %(default)s)")
    bleu("--smooth-value", "-sv", type=float, default=None, dest="bleu_smooth_value",
         help="The smoothing value. Only valid for floor and add-k. (Defaults: floor: "
              f"{SMOOTH_DEFAULTS['floor']}, add-k: {SMOOTH_DEFAULTS['add-k']})")
    bleu("--tokenize", "-tok", choices=TOKENIZERS, default=None, dest="bleu_tokenize",
         help="Tokenization method to use for BLEU. If not provided, defaults to `zh` for "
              "Chinese, `ja-mecab` for Japanese, `ko-mecab` for Korean and `13a` (mteval) "
              "otherwise.")
    bleu("--lowercase", "-lc", dest="bleu_lowercase", action="store_true", default=False,
         help="If True, enables case-insensitivity. (Default: %(default)s)")
    bleu("--force", default=False, action="store_true", dest="bleu_force",
         help="Insist that your tokenized input is actually detokenized.")

    chrf = parser.add_argument_group("chrF related arguments").add_argument
    chrf("--chrf-char-order", "-cc", type=int, default=6,
         help="Character n-gram order. (Default: %(default)s)")
    chrf("--chrf-word-order", "-cw", type=int, default=0,
         help="Word n-gram order (Default: %(default)s). If equals to 2, the metric is "
              "referred to as chrF++.")
    chrf("--chrf-beta", type=int, default=2,
         help="Determine the importance of recall w.r.t precision. (Default: %(default)s)")
    chrf("--chrf-whitespace", action="store_true", default=False,
         help="Include whitespaces when extracting character n-grams. (Default: "
              "%(default)s)")
    chrf("--chrf-lowercase", action="store_true", default=False,
         help="Enable case-insensitivity. (Default: %(default)s)")
    chrf("--chrf-eps-smoothing", action="store_true", default=False,
         help="Enables epsilon smoothing similar to chrF++.py, NLTK and Moses; instead of "
              "effective order smoothing. (Default: %(default)s)")

    ter = parser.add_argument_group(
        "TER related arguments (The defaults replicate TERCOM's behavior)").add_argument
    ter("--ter-case-sensitive", action="store_true",
        help="Enables case sensitivity. (Default: %(default)s)")
    ter("--ter-asian-support", action="store_true",
        help="Enables special treatment of Asian characters. (Default: %(default)s)")
    ter("--ter-no-punct", action="store_true",
        help="Removes punctuation. (Default: %(default)s)")
    ter("--ter-normalized", action="store_true",
        help="Applies basic normalization and tokenization. (Default: %(default)s)")

    confidence = parser.add_argument_group(
        "Confidence interval (CI) estimation for single-system evaluation").add_argument
    confidence("--confidence", "-ci", action="store_true",
               help="Report confidence interval using bootstrap resampling.")
    confidence("--confidence-n", "-cin", type=int, default=1000,
               help="Set the number of bootstrap resamples for CI estimation (Default: "
                    "%(default)s).")

    paired_group = parser.add_argument_group(
        "Paired significance testing for multi-system evaluation")
    either = paired_group.add_mutually_exclusive_group().add_argument
    either("--paired-ar", "-par", action="store_true",
           help="Perform paired test using approximate randomization (AR). This option is "
                "mutually exclusive with --paired-bs (Default: %(default)s).")
    either("--paired-bs", "-pbs", action="store_true",
           help="Perform paired test using bootstrap resampling. This option is mutually "
                "exclusive with --paired-ar (Default: %(default)s).")
    paired = paired_group.add_argument
    paired("--paired-ar-n", "-parn", type=int, default=10000,
           help="Number of trials for approximate randomization test (Default: "
                "%(default)s).")
    paired("--paired-bs-n", "-pbsn", type=int, default=1000,
           help="Number of bootstrap resamples for paired bootstrap resampling test "
                "(Default: %(default)s).")
    paired("--paired-jobs", "-j", type=int, default=1,
           help="If 0, launches as many workers as the number of systems. If > 0, sets the "
                "number of workers manually. This feature is currently not supported on "
                "Windows.")

    report = parser.add_argument_group("Reporting related arguments").add_argument
    report("--quiet", "-q", default=False, action="store_true",
           help="Suppress verbose messages.")
    report("--short", "-sh", default=False, action="store_true",
           help="Produce a shorter (less human readable) signature.")
    report("--score-only", "-b", default=False, action="store_true",
           help="Print only the computed score.")
    report("--width", "-w", type=int, default=1,
           help="Floating point width (Default: %(default)s).")
    report("--detail", "-d", default=False, action="store_true",
           help="Print detailed information (split test sets based on origlang).")
    report("--no-color", "-nc", action="store_true",
           help="Disable the occasional use of terminal colors.")
    report("--format", "-f", default="json", choices=OUTPUT_FORMATS,
           help="Set the output format. `latex` is only valid for multi-system mode whereas "
                "`json` and `text` apply to single-system mode only. This flag is "
                "overridden if the SACREBLEU_FORMAT environment variable is set to one of "
                "the valid choices (Default: %(default)s).")
    add("--version", "-V", action="version", version=f"%(prog)s {VERSION}")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """sacrebleu's arguments, with SACREBLEU_FORMAT overriding -f as sacrebleu does."""
    args = build_parser().parse_args(list(argv))
    wanted = os.environ.get("SACREBLEU_FORMAT", "").lower()
    if "SACREBLEU_FORMAT" in os.environ and wanted in OUTPUT_FORMATS:
        args.format = wanted
    return args


# -- messages and output ----------------------------------------------------------------

LOG = logging.getLogger("sacrebleu")
"""sacrebleu's logger: its dataset helpers, used for test sets, log to it as well."""


@contextlib.contextmanager
def messages(quiet: bool) -> Iterator[None]:
    """Messages on stderr as sacrebleu shows them: `sacreBLEU: ` and INFO and above, or
    with -q (when sacrebleu configures no logging) only warnings and errors, bare."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s" if quiet else "sacreBLEU: %(message)s"))
    handler.setLevel(logging.WARNING if quiet else logging.INFO)
    saved = LOG.level, LOG.propagate
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    try:
        yield
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(saved[0])
        LOG.propagate = saved[1]


def fail(*errors: str, code: int = 1) -> SystemExit:
    """Log sacrebleu's error lines; the caller raises the exit with its code."""
    for error in errors:
        LOG.error(error)
    return SystemExit(code)


class Output:
    """Standard output in UTF-8 whatever the locale, as sacrebleu reopens it, with
    sacrebleu's colours where they would reach a terminal: colorama strips them when
    stdout is not one, and NO_COLOR or --no-color turn them off."""

    def __init__(self, no_color: bool) -> None:
        self.stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n",
                                       line_buffering=True)
        self.colors = not (os.environ.get("NO_COLOR", False) or no_color) \
            and sys.stdout.isatty()

    def print(self, text: str = "") -> None:
        self.stream.write(f"{text}\n")

    def paint(self, text: str, color: str) -> str:
        return f"{COLOR_CODES[color]}{text}{COLOR_RESET}" if self.colors else text

    def close(self) -> None:
        """Flush; on a terminal with colours, end as colorama does at exit, with a reset."""
        if self.colors:
            self.stream.write(COLOR_RESET)
        self.stream.flush()
        self.stream.detach()


# -- metrics ----------------------------------------------------------------------------

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


class Metric:
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


def make_metrics(args: argparse.Namespace, nrefs: int) -> Dict[str, Metric]:
    """The metrics of -m, keyed and ordered as sacrebleu's dict of them (a repeated
    metric is built again, with its warnings, and keeps its first place)."""
    metrics: Dict[str, Metric] = {}
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


def make_bleu(args: argparse.Namespace, sentence_level: bool) -> Metric:
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
    return Metric("BLEU", spec)


def make_chrf(args: argparse.Namespace, sentence_level: bool) -> Metric:
    """chrF with the --chrf-* options; named chrF<beta> with a + per word order."""
    # beta enters only squared: sacrebleu's chrF-1 is evalproto's chrf --beta 1
    metric = Metric("CHRF", metric_spec("chrf", args, chrf_beta=abs(args.chrf_beta)))
    metric.name = f"chrF{args.chrf_beta}" + "+" * args.chrf_word_order  # with its sign
    return metric


def make_ter(args: argparse.Namespace, sentence_level: bool) -> Metric:
    """TER with the --ter-* options."""
    return Metric("TER", metric_spec("ter", args))


# -- formatting scores ------------------------------------------------------------------

@dataclass
class Score:
    """A score as sacrebleu reports it: mean and CI from the bootstrap, p-value from a
    paired test, details after the score."""

    name: str
    score: Number
    details: str = ""
    mean: Optional[Number] = None
    ci: Optional[Number] = None
    p_value: Optional[float] = None

    def format(self, width: int, score_only: bool = False, signature: str = "",
               as_json: bool = False) -> str:
        """One score as sacrebleu's Score.format writes it."""
        width = decimals(width)
        fields: Dict[str, Any] = {"name": self.name, "score": float(f"{self.score:.{width}f}"),
                                  "signature": signature}
        text = f"{self.score:.{width}f}"
        if self.mean is not None and self.mean > 0:
            mean, ci = f"{self.mean:.{width}f}", f"{self.ci:.{width}f}"
            interval = f"μ = {mean} ± {ci}"
            text += f" ({interval})"
            if as_json:
                fields.update(confidence_mean=float(mean), confidence_var=float(ci),
                              confidence=interval)
        line = f"{self.name}|{signature}" if signature else self.name
        line = f"{line} = {text}"
        if self.details:
            line += f" {self.details}"
            fields["verbose_score"] = self.details
        if score_only:
            return text
        if as_json:
            for pair in signature.split("|"):
                key, value = pair.split(":")
                fields[key] = value
            return json.dumps(fields, indent=1, ensure_ascii=False)
        return line

    def as_json(self) -> Dict[str, Optional[float]]:
        """A paired test's result as sacrebleu's JSON holds it. sacrebleu 2.6 cannot
        write the float32 means of chrF and TER; they are written here as numbers."""
        return {key: None if value is None else float(value) for key, value in
                (("score", self.score), ("p_value", self.p_value), ("mean", self.mean),
                 ("ci", self.ci))}


def print_single_results(out: Output, lines: List[str], output_format: str) -> None:
    """Single-system scores: JSON objects (a list of them for several metrics), or text
    lines aligned on their first '='."""
    if output_format == "json":
        out.print("[\n" + ",\n".join(lines) + "\n]" if len(lines) > 1 else lines[0])
        return
    if "μ" in lines[0]:
        interval = re.compile(r"(\(μ = [0-9\.]+ ± [0-9\.]+\))")
        lines = [interval.sub(lambda match: out.paint(match.group(), "cyan"), line)
                 for line in lines]
    if len(lines) == 1:
        out.print(lines[0])
        return
    aligned = []
    for line in lines:
        if "=" in line:
            aligned.append((line.index("=") - 1, line))
        else:
            out.print(line)
    if aligned:
        width = max(position for position, _ in aligned)
        for position, line in aligned:
            out.print(f"{line[:position]:>{width}}{line[position:]}")


Cell = Union[str, Score]


def print_results_table(out: Output, columns: Dict[str, List[Cell]],
                        signatures: Dict[str, str], args: argparse.Namespace) -> None:
    """Several systems: a JSON list, or a table (text or LaTeX) with, for paired tests,
    sacrebleu's explanation, then the signatures."""
    decimals(args.width)
    if args.format == "json":
        names = columns["System"]
        rows = [{"system": name, **{metric: cells[i] if isinstance(cells[i], str)
                                    else cells[i].as_json()
                                    for metric, cells in columns.items() if metric != "System"}}
                for i, name in enumerate(names)]
        out.print(json.dumps(rows, indent=4))
        return
    table_format = "fancy_grid" if args.format == "text" else "latex_booktabs"
    break_before_p = "\n" if table_format == "fancy_grid" else " "
    formatted: Dict[str, List[str]] = {"System": list(columns["System"])}
    bootstrap = False
    for metric, cells in columns.items():
        if metric == "System":
            continue
        texts = []
        for cell in cells:
            if isinstance(cell, str):
                texts.append(cell)
                continue
            text = f"{cell.score:.{args.width}f}"
            if cell.mean is not None:
                bootstrap = True
                text += f" ({cell.mean:.{args.width}f} ± {cell.ci:.{args.width}f})"
            if cell.p_value is not None:
                p_value = f"(p = {cell.p_value:.4f})"
                text += break_before_p + (out.paint(p_value, "red") if cell.p_value > 0.05
                                          else p_value + "*")
            texts.append(text)
        formatted[metric + " (μ ± 95% CI)" if bootstrap else metric] = texts

    painted: Dict[str, List[str]] = {}
    baseline_name, has_baseline = "", False
    for header, cells in formatted.items():
        if cells and (cells[0].startswith("Baseline:") or has_baseline):
            if cells[0].startswith("Baseline:"):
                baseline_name = cells[0]
            has_baseline = True
            cells[0] = out.paint(cells[0], "yellow")
        painted[out.paint(header, "cyan")] = cells
    out.print(tabulate(painted, headers="keys", tablefmt=table_format, colalign=("right",),
                       stralign="center", numalign="center", floatfmt=f".{args.width}f"))
    out.print()
    if args.paired_bs or args.paired_ar:
        print_paired_header(out, args, baseline_name)
    out.print("-----------------")
    out.print("Metric signatures")
    out.print("-----------------")
    for name, signature in signatures.items():
        out.print(f" - {name:<10} {signature}")


def print_paired_header(out: Output, args: argparse.Namespace, baseline_name: str) -> None:
    """sacrebleu's explanation of its paired test, above the signatures."""
    if args.paired_bs:
        title = f"Paired bootstrap resampling test with {args.paired_bs_n} resampling trials"
        shown = "Actual system score / bootstrap estimated true mean / 95% CI are provided"
    else:
        title = f"Paired approximate randomization test with {args.paired_ar_n} trials"
        shown = "Actual system score is provided"
    baseline = out.paint("baseline", "yellow")
    null = out.paint("Null hypothesis", "green")
    for line in [
        "-" * len(title), title, "-" * len(title),
        f" - Each system is pairwise compared to {out.paint(baseline_name, 'yellow')}.",
        f"   {shown} for each metric.",
        "",
        f" - {null}: the system and the {baseline} translations are essentially",
        f"   generated by the same underlying process. For a given system and the {baseline},",
        "   the p-value is roughly the probability of the absolute score difference (delta)",
        "   or higher occurring due to chance, under the assumption that the "
        f"{null.lower()} is correct.",
        "",
        f" - Assuming a significance threshold of 0.05, the {null.lower()} can be rejected",
        '   for p-values < 0.05 (marked with "*"). This means that the delta is unlikely to '
        "be attributed",
        f'   to chance, hence the system is significantly "different" than the {baseline}.',
        f"   Otherwise, the p-values are {out.paint('highlighted in red', 'red')}.",
        "",
        " - NOTE: Significance does not tell whether a system is \"better\" than the "
        f"{baseline} but rather",
        '   emphasizes the "difference" of the systems in terms of the replicability of '
        "the delta.",
        "",
    ]:
        out.print(line)


# -- resampling -------------------------------------------------------------------------

def seed_setting() -> Tuple[str, Optional[int]]:
    """SACREBLEU_SEED as sacrebleu reads it: the text its signatures show, and the seed
    ('none' for an unseeded run)."""
    text = os.environ.get("SACREBLEU_SEED", "12345")
    return text, None if text.lower() == "none" else int(text)


# -- test sets --------------------------------------------------------------------------

class NotCached(Exception):
    """A test set that sacrebleu would have to download."""


def datasets() -> Dict[str, Any]:
    """sacrebleu's DATASETS, each unable to download: a dataset whose raw files are not
    all in sacrebleu's cache raises NotCached where sacrebleu would download them."""
    found = _sacrebleu("dataset").DATASETS
    for dataset in found.values():
        if "maybe_download" not in vars(dataset):
            dataset.maybe_download = _refuse_download(dataset)
    return found


def _refuse_download(dataset: Any) -> Callable[[], None]:
    def check() -> None:
        for url in dataset.data or []:
            path = os.path.join(dataset._rawdir, dataset._get_tarball_filename(url))
            if not os.path.exists(path) or os.path.getsize(path) == 0:
                raise NotCached(
                    f"Test set {dataset.name!r} is not in sacrebleu's local cache "
                    f"({os.path.dirname(dataset._outdir)}), and evalproto downloads "
                    f"nothing: fetch it once with `sacrebleu --download {dataset.name}` "
                    f"where the network is reachable.")
    return check


def reference_files(test_set: str, langpair: str) -> List[str]:
    """The reference files of a cached test set, processed from its raw files if need be."""
    return _sacrebleu("utils").get_reference_files(test_set, langpair)


# -- reading ----------------------------------------------------------------------------

def open_text(path: str, encoding: str) -> io.TextIOBase:
    """A text file as sacrebleu opens one: lines end at '\\n' only; .gz decompressed."""
    if path.endswith(".gz"):
        return gzip.open(path, mode="rt", encoding=encoding, newline="\n")
    return open(path, mode="rt", encoding=encoding, newline="\n")


def read_references(files: List[List[str]], num_refs: int, encoding: str) -> List[List[str]]:
    """One list of lines per reference, from each test set's files in turn; with
    -nr N each line holds N tab-separated references."""
    refs: List[List[str]] = [[] for _ in range(max(len(files[0]), num_refs))]
    for test_set_files in files:
        for number, path in enumerate(test_set_files):
            with open_text(path, encoding) as stream:
                for line_number, line in enumerate(stream, 1):
                    line = line.rstrip()
                    if num_refs == 1:
                        refs[number].append(line)
                        continue
                    fields = line.split(sep="\t", maxsplit=num_refs - 1)
                    if len(fields) != num_refs:
                        raise fail(f"FATAL: line {line_number}: expected {num_refs} fields, "
                                   f"but found {len(fields)}.", code=17)
                    for column, field in enumerate(fields):
                        refs[column].append(field)
    return refs


def read_stdin_systems(encoding: str) -> List[List[str]]:
    """Systems from standard input, one tab-separated column each; the first line
    tells how many (and, as in sacrebleu, its fields keep their trailing spaces)."""
    stream = io.TextIOWrapper(sys.stdin.buffer, encoding=encoding)
    try:
        lines = [line.rstrip() for line in stream] or [""]
    finally:
        stream.detach()
    try:
        return api.stdin_columns(lines)
    except evalproto.InputError:
        raise fail("FATAL: the number of tab-delimited fields in the input stream "
                   "differ across lines.", code=17) from None


def read_file_systems(paths: List[str], encoding: str,
                      paired: bool) -> Tuple[List[str], List[List[str]]]:
    """Systems from -i files, named by their paths; in a paired test the baseline
    given again is skipped, any other repeat is an error."""
    names: List[str] = []
    systems: List[List[str]] = []
    for path in paths:
        if path in names:
            if paired and path == names[0]:
                LOG.info(f"Ignoring {path!r} as it was also given as the baseline.")
                continue
            raise fail(f"{path!r} already used to name a system.",
                       "Make sure to have a different basename for each system.")
        with open_text(path, encoding) as stream:
            systems.append([line.rstrip() for line in stream])
        names.append(path)
    return names, systems


# -- the run ----------------------------------------------------------------------------

def run(argv: Sequence[str]) -> int:
    """Run sacrebleu's command line with these arguments; the exit code."""
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors (2), -h and -V (0)
        return _exit_code(exc)
    out = Output(args.no_color)
    try:
        with messages(args.quiet):
            evaluate(args, out)
        return 0
    except SystemExit as exc:
        return _exit_code(exc)
    except (NotCached, evalproto.EvalprotoError, OSError, UnicodeError) as exc:
        # where sacrebleu shows a traceback (a missing file, a wrong --encoding) or would
        # download; the exit code is sacrebleu's, 1
        with messages(args.quiet):
            # a decoding error names its file; a codec's own complaint does not
            codec = isinstance(exc, UnicodeError) and not isinstance(exc, UnicodeDecodeError)
            LOG.error(f"--encoding {args.encoding}: {exc}" if codec else str(exc))
        return 1
    finally:
        out.close()


# Values that sacrebleu takes and then crashes on (with a traceback, exit 1) give the
# same exit with a message that says what was expected, each where sacrebleu would
# crash, so that every check sacrebleu makes before it comes first.

def check_langpair(args: argparse.Namespace) -> None:
    """-l without a dash (sacrebleu splits it for BLEU's target language)."""
    if args.langpair is not None and "-" not in args.langpair:
        raise fail(f"-l {args.langpair}: a language pair is SOURCE-TARGET, e.g. de-en")


def check_encoding(encoding: str) -> None:
    """--encoding of no codec (sacrebleu opens the first reference with it)."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise fail(f"--encoding {encoding}: unknown encoding") from None


def decimals(width: int) -> int:
    """-w as a number of decimals (sacrebleu formats its first score with it)."""
    if width < 0:
        raise fail(f"-w {width}: the width is a number of decimals, 0 or more")
    return width


def _exit_code(exc: SystemExit) -> int:
    """The process exit code that a SystemExit stands for."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def evaluate(args: argparse.Namespace, out: Output) -> None:
    """sacrebleu's main(), step for step, with evalproto's statistics."""
    if args.download:
        if args.download not in datasets():
            raise fail(f"No such test set {args.download}")
        _sacrebleu("utils").download_test_set(args.download, args.langpair)
        return
    if args.list:
        return list_test_sets(args, out)
    if args.sentence_level and len(args.metrics) > 1:
        raise fail("Only one metric can be used in sentence-level mode.")
    if args.citation:
        return print_citations(args, out)
    if args.num_refs != 1 and (args.test_set is not None or len(args.refs) > 1):
        raise fail("The --num-refs argument allows you to provide any number of "
                   "tab-delimited references in a single file.",
                   "You can only use it with externally provided references, however "
                   "(i.e., not with `-t`),",
                   "and you cannot then provide multiple reference files.")
    check_test_sets(args)
    if args.echo:
        return echo_test_sets(args, out)
    check_langpair(args)
    inputs = read_inputs(args)
    check_modes(args, len(inputs.systems))
    systems, refs = select_segments(inputs, args)

    metrics = make_metrics(args, len(refs))
    if args.sentence_level:
        return sentence_scores(metrics, systems[0], refs, args, out)
    if args.detail and args.format == "json":
        args.format = "text"  # the subset lines would break the JSON
    if len(systems) == 1:
        single_system(metrics, systems[0], refs, args, out)
        if args.detail:
            print_subset_results(metrics, inputs.systems[0], inputs.refs, args, out)
        return
    LOG.info(f"Found {len(systems)} systems.")
    if args.paired_bs or args.paired_ar:
        columns, signatures = paired_tests(metrics, inputs.names, systems, refs, args)
    else:
        columns, signatures = several_systems(metrics, inputs.names, systems, refs, args)
    print_results_table(out, columns, signatures, args)


@dataclass
class Inputs:
    """The systems (named as sacrebleu names them) and the references, as read."""

    names: List[str]
    systems: List[List[str]]
    refs: List[List[str]]


def read_inputs(args: argparse.Namespace) -> Inputs:
    """The references (files, -nr columns or test sets), then the systems (-i files or
    the columns of stdin), with sacrebleu's warnings and errors in its order."""
    paired = args.paired_bs or args.paired_ar
    if args.test_set is not None and args.bleu_tokenize == "none":
        LOG.warning("You are turning off BLEU's internal tokenizer presumably to supply "
                    "your own tokenized files.")
        LOG.warning("Published numbers will not be comparable to other papers.")
    if args.test_set is None:
        ref_files = [args.refs]
    else:
        ref_files = []
        for test_set in args.test_set.split(","):
            files = reference_files(test_set, args.langpair)
            if not files:
                LOG.warning(f"No references found for test set {test_set}/{args.langpair}.")
            ref_files.append(files)
    check_encoding(args.encoding)
    refs = read_references(ref_files, args.num_refs, args.encoding)
    if args.input is None:
        systems = read_stdin_systems(args.encoding)
        names = [f"System {i + 1}" for i in range(len(systems))]
        if paired:
            names = ["Baseline"] + [f"System {i + 1}" for i in range(len(systems) - 1)]
    else:
        names, systems = read_file_systems(args.input, args.encoding, paired)
        if paired and names:
            names[0] = f"Baseline: {names[0]}"
    return Inputs(names, systems, refs)


def check_modes(args: argparse.Namespace, systems: int) -> None:
    """sacrebleu's refusals of modes that do not go together."""
    paired = args.paired_bs or args.paired_ar
    if args.sentence_level:
        if systems > 1:
            raise fail("Only one system can be evaluated in sentence-level mode.")
        if args.confidence or paired:
            raise fail("Statistical tests are unavailable in sentence-level mode.")
    if paired and systems < 2:  # sacrebleu 2.6 crashes on none (-i with no file)
        raise fail("Paired tests require multiple input systems given to --input (-i).")
    if systems > 1 and args.confidence:
        raise fail("Use paired tests (--paired) for multiple systems.")


def select_segments(inputs: Inputs, args: argparse.Namespace
                    ) -> Tuple[List[List[str]], List[List[str]]]:
    """The systems and references of --origlang and --subset (all by default), checked
    to be non-empty and as long as each other."""
    streams = [*inputs.systems, *inputs.refs]
    if args.origlang is not None or args.subset is not None:
        streams = filter_subset(streams, args)
    systems, refs = streams[:len(inputs.systems)], streams[len(inputs.systems):]
    for system in systems:
        if not system:
            message = f"Test set {args.test_set!r} contains no sentence"
            if args.origlang is not None or args.subset is not None:
                message += " with"
                if args.origlang:
                    message += f" origlang={args.origlang}"
                if args.subset:  # sacrebleu 2.6 names the subset twice
                    message += f" subset={args.subset}" + args.subset
            raise fail(message)
        check_lengths(system, refs, args.test_set)
    return systems, refs


def check_test_sets(args: argparse.Namespace) -> None:
    """sacrebleu's checks of -t, -l and the references, in its order and words."""
    test_sets = args.test_set.split(",") if args.test_set is not None else []
    if test_sets:
        known = datasets()
        for test_set in test_sets:
            if test_set not in known:
                raise fail(f"Unknown test set {test_set!r}",
                           "Please run with --list to see the available test sets.")
    if args.test_set is None:
        if not args.refs:
            raise fail("If manual references given, make sure to provide them before the "
                       "-i/--input argument to avoid confusion.",
                       "Otherwise, I need a predefined test set (-t) from the following "
                       "list:",
                       str(_sacrebleu("utils").get_available_testsets()))
    elif args.refs:
        raise fail("I need exactly one of (a) a predefined test set (-t) or (b) a list of "
                   "references")
    elif args.langpair is None:
        raise fail("I need a language pair (-l). Use --list to see available language pairs "
                   "for this test set.")
    else:
        for test_set in test_sets:
            langpairs = _sacrebleu("utils").get_langpairs_for_testset(test_set)
            if args.langpair not in langpairs:
                raise fail(f"No such language pair {args.langpair!r}",
                           f"Available language pairs for {test_set!r} are:",
                           *[f" > {langpair}" for langpair in langpairs])


def echo_test_sets(args: argparse.Namespace, out: Output) -> None:
    """--echo: fields of the test sets, tab-separated, by sacrebleu's helper."""
    if args.langpair is None or args.test_set is None:
        LOG.warning("--echo requires a test set (--t) and a language pair (-l)")
        raise SystemExit(1)
    with contextlib.redirect_stdout(out.stream):
        for test_set in args.test_set.split(","):
            _sacrebleu("utils").print_test_set(test_set, args.langpair, args.echo,
                                               args.origlang, args.subset)


def check_lengths(system: List[str], refs: List[List[str]], test_set: Optional[str]) -> None:
    """sacrebleu's error when a system and the references differ in length."""
    if all(len(ref) == len(system) for ref in refs):
        return
    errors = ["System and reference streams have different lengths."]
    if test_set:
        cache = _sacrebleu("utils").SACREBLEU_DIR
        errors += ["This could be an issue with your system output or with sacreBLEU's "
                   "reference database if -t is given.",
                   "For the latter, try cleaning out the cache by typing:\n",
                   f"  rm -r {cache}/{test_set}\n",
                   "The test sets will be re-downloaded the next time you run sacreBLEU."]
    raise fail(*errors)


def filter_subset(streams: List[List[str]], args: argparse.Namespace) -> List[List[str]]:
    """The segments of --origlang and --subset, found by sacrebleu's helper in the test
    set's raw files."""
    if args.test_set is None or args.langpair is None:
        raise fail("Filtering for --origlang or --subset needs a test (-t) and a language "
                   "pair (-l).")
    return _sacrebleu("utils").filter_subset(streams, args.test_set, args.langpair,
                                             args.origlang, args.subset)


def list_test_sets(args: argparse.Namespace, out: Output) -> None:
    """--list: the test sets (for a language pair), or the fields of a test set."""
    known = datasets()
    utils = _sacrebleu("utils")
    if args.test_set:
        pairs = [args.langpair] if args.langpair else utils.get_langpairs_for_testset(
            args.test_set)
        for pair in pairs:
            out.print(f"{pair}: {', '.join(known[args.test_set].fieldnames(pair))}")
        return
    if args.langpair:
        out.print(f"The available test sets for {args.langpair} are:")
        test_sets = utils.get_available_testsets_for_langpair(args.langpair)
    else:
        out.print("The available test sets are:")
        test_sets = utils.get_available_testsets()
    for test_set in sorted(test_sets):
        out.print(f"{test_set:<30}: {known[test_set].description.strip()}")


def print_citations(args: argparse.Namespace, out: Output) -> None:
    """--citation. sacrebleu 2.6 crashes here (it asks a dataset `'citation' in`, which
    datasets do not support); this prints what it meant to."""
    if not args.test_set:
        raise fail("I need a test set (-t).")
    known = datasets()
    for test_set in args.test_set.split(","):
        if test_set not in known:
            raise fail(f"Unknown test set {test_set!r}",
                       "Please run with --list to see the available test sets.")
        if not known[test_set].citation:
            LOG.error(f"No citation found for {test_set}")
        else:
            out.print(known[test_set].citation)


def sentence_scores(metrics: Dict[str, Metric], hyps: List[str], refs: List[List[str]],
                    args: argparse.Namespace, out: Output) -> None:
    """-sl: each segment's score, with the signature, one line each."""
    (metric,) = metrics.values()
    rows = metric.rows(refs, hyps)
    signature = metric.signature(args.short)
    for row in rows:
        score, details = metric.score(row[None, :])
        out.print(Score(metric.name, score, details).format(args.width, args.score_only,
                                                            signature))


def single_system(metrics: Dict[str, Metric], hyps: List[str], refs: List[List[str]],
                  args: argparse.Namespace, out: Output) -> None:
    """One system: each metric's line (or JSON object), metrics in sacrebleu's order."""
    lines = []
    bootstrap = args.confidence_n if args.confidence else 1
    for key in sorted(metrics):
        metric = metrics[key]
        metric.warn_if_tokenized(hyps)
        rows = metric.rows(refs, hyps)
        score = Score(metric.name, *metric.score(rows))
        fields = None
        if bootstrap > 1:
            seed_text, seed = seed_setting()
            score.mean, score.ci = metric.table({"system": rows}).confidence_interval(
                bootstrap, seed)
            fields = Resampling(bs=bootstrap, seed=seed_text.lower())
        signature = metric.signature(args.short and args.format != "json", fields)
        lines.append(score.format(args.width, args.score_only, signature,
                                  args.format == "json"))
    print_single_results(out, lines, args.format)


def several_systems(metrics: Dict[str, Metric], names: List[str], systems: List[List[str]],
                    refs: List[List[str]], args: argparse.Namespace
                    ) -> Tuple[Dict[str, List[Cell]], Dict[str, str]]:
    """Several systems without a test: each one's score under each metric."""
    columns: Dict[str, List[Cell]] = {"System": names}
    signatures: Dict[str, str] = {}
    for hyps in systems:
        for key in sorted(metrics):
            metric = metrics[key]
            metric.warn_if_tokenized(hyps)
            score = Score(metric.name, *metric.score(metric.rows(refs, hyps)))
            signatures[metric.name] = metric.signature(args.short)
            columns.setdefault(metric.name, []).append(score.format(args.width, True))
    return columns, signatures


def paired_tests(metrics: Dict[str, Metric], names: List[str], systems: List[List[str]],
                 refs: List[List[str]], args: argparse.Namespace
                 ) -> Tuple[Dict[str, List[Cell]], Dict[str, str]]:
    """Each system against the first (paired bootstrap or approximate randomization),
    with sacrebleu's messages in its order."""
    test = "bs" if args.paired_bs else "ar"
    samples = args.paired_bs_n if test == "bs" else args.paired_ar_n
    samples = samples if samples > 0 else PAIRED_DEFAULTS[test]
    _, seed = seed_setting()
    test_seed = seed if seed else None  # sacrebleu's tests treat a seed of 0 as none
    columns: Dict[str, List[Cell]] = {"System": names}
    signatures: Dict[str, str] = {}
    baselines: Dict[str, Tuple[Metric, np.ndarray]] = {}
    for key, metric in metrics.items():
        LOG.info(f"Pre-computing {key} statistics for {names[0]!r}")
        metric.warn_if_tokenized(systems[0])
        rows = metric.rows(refs, systems[0])
        score = Score(metric.name, metric.score(rows)[0])
        if test == "bs":
            score.mean, score.ci = metric.table({"baseline": rows}).confidence_interval(
                samples, seed, paired=True)
        baselines[metric.name] = metric, rows
        columns[metric.name] = [score]
        fields = Resampling(bs=samples, seed=str(seed).lower()) if test == "bs" else \
            Resampling(ar=samples, seed=str(seed).lower())
        signatures[metric.name] = metric.signature(args.short, fields)

    jobs = args.paired_jobs
    if jobs == 0:
        jobs = max(1, min(multiprocessing.cpu_count() // 2, len(systems) - 1))
    if jobs != 1:  # the results are the same computed in turn
        LOG.info(f"Launching {jobs} parallel workers.")
        if jobs < 0:
            raise fail("Number of processes must be at least 1")
    for name, hyps in zip(names[1:], systems[1:]):
        for metric_name, (metric, baseline_rows) in baselines.items():
            LOG.info(f"Computing {metric_name} for {name!r} and extracting sufficient "
                     f"statistics")
            metric.warn_if_tokenized(hyps)
            rows = metric.rows(refs, hyps)
            LOG.info(f" > Performing paired bootstrap resampling test (# resamples: {samples})"
                     if test == "bs" else
                     f" > Performing approximate randomization test (# trials: {samples})")
            table = metric.table({"baseline": baseline_rows, "system": rows})
            _, tested = api.analyse([table], evalproto.Analysis(
                paired=test, paired_n=samples, seed=test_seed))
            result = Score(metric_name, metric.score(rows)[0], p_value=tested.p_value)
            if test == "bs":
                result.mean, result.ci = tested.mean, tested.ci
            columns[metric_name].append(result)
    return columns, signatures


def print_subset_results(metrics: Dict[str, Metric], hyps: List[str], refs: List[List[str]],
                         args: argparse.Namespace, out: Output) -> None:
    """-d: scores on each original language and domain of a test set."""
    utils = _sacrebleu("utils")
    width = decimals(args.width)
    origlangs = args.origlang if args.origlang else utils.get_available_origlangs(
        args.test_set, args.langpair)
    if len(origlangs) == 0:
        out.print("No subset information found. Consider using --origlang argument.")
        return
    results: Dict[str, List[Tuple[int, Score]]] = {}
    for origlang in origlangs:
        subsets = [None] + ([args.subset] if args.subset is not None else
                            utils.get_available_subsets(args.test_set, args.langpair))
        for subset in subsets:
            system, *subset_refs = utils.filter_subset(
                [hyps, *refs], args.test_set, args.langpair, origlang, subset)
            if not system:
                continue
            key = f"origlang={origlang}"
            if subset is None:
                key += " domain=ALL"
            elif subset.startswith("country:"):
                key += f" country={subset[8:]}"
            else:
                key += f" domain={subset}"
            for metric in metrics.values():
                metric.warn_if_tokenized(system)
                score = Score(metric.name, metric.score(metric.rows(subset_refs, system))[0])
                results.setdefault(key, []).append((len(system), score))
    if not results:  # sacrebleu 2.6 crashes on max() of nothing
        raise fail("No subset of the test set has a sentence.")
    key_width = max(len(key) for key in results) + 1
    name_width = max(len(score.name) for _, score in next(iter(results.values())))
    for key, scores in results.items():
        painted = out.paint(f"{key:<{key_width}}", "yellow")
        for count, score in scores:
            out.print(f"{painted}: sentences={count:<6} {score.name:<{name_width}} = "
                      f"{score.score:.{width}f}")


# -- the click command ------------------------------------------------------------------

class _PassThrough(click.Command):
    """Hands every argument, `--` and -h included, to sacrebleu's parser untouched."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        ctx.meta["sacrebleu_args"] = list(args)
        return []


@click.command("sacrebleu", cls=_PassThrough, add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                 "help_option_names": []})
@click.pass_context
def command(ctx: click.Context) -> None:
    """sacrebleu's command line (same arguments, same output), scored by evalproto."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly, as sacrebleu does
    ctx.exit(run(ctx.meta["sacrebleu_args"]))
