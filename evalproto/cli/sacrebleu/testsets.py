"""sacrebleu's test sets (-t, -l, --echo, --list, --citation, --origlang, --subset),
read with its dataset module from its local cache: nothing is downloaded."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
from typing import Any, Callable, Dict, List

from evalproto.cli.sacrebleu.output import LOG, Output, fail


def _sacrebleu(module: str) -> Any:
    """A module of sacrebleu, imported only where it is needed (test sets, --list): the
    `evalproto` command imports this module for every subcommand, and importing
    sacrebleu's datasets costs a few tens of milliseconds."""
    return importlib.import_module(f"sacrebleu.{module}")



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
