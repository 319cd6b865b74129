"""sacrebleu 2.6.0's argument parser, with its options, defaults and usage text."""

from __future__ import annotations

import argparse
import os
from typing import Dict, Optional, Sequence

import evalproto

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
