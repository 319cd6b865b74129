"""sacrebleu's main(), step for step, with evalproto's statistics: one system, several,
sentence by sentence, paired tests, test set details."""

from __future__ import annotations

import argparse
import multiprocessing
from typing import Dict, List, Sequence, Tuple

import numpy as np

import evalproto
from evalproto.api import commandline as api
from evalproto.cli.sacrebleu.inputs import check_langpair, read_inputs, select_segments
from evalproto.cli.sacrebleu.metrics import DropInMetric, Resampling, make_metrics, seed_setting
from evalproto.cli.sacrebleu.output import (
    LOG,
    Cell,
    Output,
    ScoreLine,
    decimals,
    fail,
    messages,
    print_results_table,
    print_single_results,
)
from evalproto.cli.sacrebleu.parser import PAIRED_DEFAULTS, parse_args
from evalproto.cli.sacrebleu.testsets import (
    NotCached,
    _sacrebleu,
    check_test_sets,
    datasets,
    echo_test_sets,
    list_test_sets,
    print_citations,
)


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


def sentence_scores(metrics: Dict[str, DropInMetric], hyps: List[str], refs: List[List[str]],
                    args: argparse.Namespace, out: Output) -> None:
    """-sl: each segment's score, with the signature, one line each."""
    (metric,) = metrics.values()
    rows = metric.rows(refs, hyps)
    signature = metric.signature(args.short)
    for row in rows:
        score, details = metric.score(row[None, :])
        out.print(ScoreLine(metric.name, score, details).format(args.width, args.score_only,
                                                            signature))


def single_system(metrics: Dict[str, DropInMetric], hyps: List[str], refs: List[List[str]],
                  args: argparse.Namespace, out: Output) -> None:
    """One system: each metric's line (or JSON object), metrics in sacrebleu's order."""
    lines = []
    bootstrap = args.confidence_n if args.confidence else 1
    for key in sorted(metrics):
        metric = metrics[key]
        metric.warn_if_tokenized(hyps)
        rows = metric.rows(refs, hyps)
        score = ScoreLine(metric.name, *metric.score(rows))
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


def several_systems(metrics: Dict[str, DropInMetric], names: List[str], systems: List[List[str]],
                    refs: List[List[str]], args: argparse.Namespace
                    ) -> Tuple[Dict[str, List[Cell]], Dict[str, str]]:
    """Several systems without a test: each one's score under each metric."""
    columns: Dict[str, List[Cell]] = {"System": list(names)}
    signatures: Dict[str, str] = {}
    for hyps in systems:
        for key in sorted(metrics):
            metric = metrics[key]
            metric.warn_if_tokenized(hyps)
            score = ScoreLine(metric.name, *metric.score(metric.rows(refs, hyps)))
            signatures[metric.name] = metric.signature(args.short)
            columns.setdefault(metric.name, []).append(score.format(args.width, True))
    return columns, signatures


def paired_tests(metrics: Dict[str, DropInMetric], names: List[str], systems: List[List[str]],
                 refs: List[List[str]], args: argparse.Namespace
                 ) -> Tuple[Dict[str, List[Cell]], Dict[str, str]]:
    """Each system against the first (paired bootstrap or approximate randomization),
    with sacrebleu's messages in its order."""
    test = "bs" if args.paired_bs else "ar"
    samples = args.paired_bs_n if test == "bs" else args.paired_ar_n
    samples = samples if samples > 0 else PAIRED_DEFAULTS[test]
    _, seed = seed_setting()
    test_seed = seed if seed else None  # sacrebleu's tests treat a seed of 0 as none
    columns: Dict[str, List[Cell]] = {"System": list(names)}
    signatures: Dict[str, str] = {}
    baselines: Dict[str, Tuple[DropInMetric, np.ndarray]] = {}
    for key, metric in metrics.items():
        LOG.info(f"Pre-computing {key} statistics for {names[0]!r}")
        metric.warn_if_tokenized(systems[0])
        rows = metric.rows(refs, systems[0])
        score = ScoreLine(metric.name, metric.score(rows)[0])
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
            result = ScoreLine(metric_name, metric.score(rows)[0], p_value=tested.p_value)
            if test == "bs":
                result.mean, result.ci = tested.mean, tested.ci
            columns[metric_name].append(result)
    return columns, signatures



def print_subset_results(metrics: Dict[str, DropInMetric], hyps: List[str], refs: List[List[str]],
                         args: argparse.Namespace, out: Output) -> None:
    """-d: scores on each original language and domain of a test set."""
    utils = _sacrebleu("utils")
    width = decimals(args.width)
    origlangs = args.origlang if args.origlang else utils.get_available_origlangs(
        args.test_set, args.langpair)
    if len(origlangs) == 0:
        out.print("No subset information found. Consider using --origlang argument.")
        return
    results: Dict[str, List[Tuple[int, ScoreLine]]] = {}
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
                score = ScoreLine(metric.name, metric.score(metric.rows(subset_refs, system))[0])
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
