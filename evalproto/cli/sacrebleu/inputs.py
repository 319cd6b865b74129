"""The references and systems as sacrebleu reads them: files, -nr columns, test sets
and the columns of standard input, with its checks in its order."""

from __future__ import annotations

import argparse
import codecs
import gzip
import io
import sys
from dataclasses import dataclass
from typing import List, Optional, Tuple

import evalproto
from evalproto.api import commandline as api
from evalproto.cli.sacrebleu.output import LOG, fail
from evalproto.cli.sacrebleu.testsets import _sacrebleu, filter_subset, reference_files

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
