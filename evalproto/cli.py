"""The `evalproto` command line."""

from __future__ import annotations

import json
from contextlib import ExitStack
from importlib.metadata import EntryPoint
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import click

from evalproto import __version__, datasets, lmlogs, lmreport, registry
from evalproto.client import DEFAULT_TIMEOUT
from evalproto.errors import EvalprotoError, InputError
from evalproto.launch import METRIC_FLAGS, option_values
from evalproto.outputs import write_atomically
from evalproto.readers import STDIN as STDIN_NAME
from evalproto.readers import Corpus, check_inputs, read_corpus, read_lines
from evalproto.reports import FORMATS, format_results, format_segments
from evalproto.resampling import DEFAULT_SEED
from evalproto.scoring import Analysis, MetricTable, analyse, stats_tables
from evalproto.sources import MetricSpec
from evalproto.statsfile import merge_stats, read_stats, write_stats

CONTEXT = {"help_option_names": ["-h", "--help"]}


# -- naming metrics -------------------------------------------------------------------

class _OrderedMetricsCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        # click collects each repeated option separately; this keeps their order.
        ctx.meta["metric_order"] = [kind for kind, _ in option_values(args, METRIC_FLAGS)]
        return super().parse_args(ctx, args)


def metric_specs(ctx: click.Context, metrics: Sequence[str],
                 evaluators: Sequence[str]) -> List[MetricSpec]:
    """The -m and -e metrics in command-line order; `bleu` if none was named."""
    values = {"metric": iter(metrics), "evaluator": iter(evaluators)}
    specs = [MetricSpec(kind, next(values[kind])) for kind in ctx.meta["metric_order"]]
    return specs or [MetricSpec("metric", "bleu")]


def _apply(options: Sequence[Callable], command: Callable) -> Callable:
    for option in reversed(options):
        command = option(command)
    return command


def metric_options(command: Callable) -> Callable:
    """-m, -e and --timeout."""
    return _apply([
        click.option("-m", "--metric", "metrics", multiple=True, metavar="SPEC",
                     help='A built-in evaluator, run in process, e.g. "bleu --tokenize '
                          'intl". Repeatable; the default is bleu.'),
        click.option("-e", "--evaluator", "evaluators", multiple=True, metavar="CMD",
                     help='An external evaluator command spoken to over the protocol, e.g. '
                          '"bleu-evaluator --lowercase". Repeatable.'),
        timeout_option,
        click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Copies of each metric to run in parallel (worker processes, or "
                          "evaluator subprocesses); the results are those of one."),
    ], command)


def _seed(ctx: click.Context, param: click.Parameter, value: str) -> Optional[int]:
    if value.lower() == "none":
        return None
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"expected an integer or 'none', got {value!r}") from None


def _reranker(ctx: click.Context, param: click.Parameter,
              value: Optional[str]) -> Optional[lmlogs.Reranker]:
    if value is None:
        return None
    try:
        alpha, beta = (float(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected two numbers ALPHA,BETA, got {value!r}") from None
    return lmlogs.Reranker(alpha, beta)


seed_option = click.option(
    "--seed", default=str(DEFAULT_SEED), show_default=True, callback=_seed,
    help="Seed of the resampling; 'none' for an unseeded run.")

output_option = click.option(
    "-o", "--output", default="-", show_default=True, metavar="FILE",
    help="Where to write the results; the file is replaced only when complete.")

rerank_option = click.option(
    "--rerank-params", "reranker", metavar="ALPHA,BETA", callback=_reranker,
    help="Fixed reranking parameters instead of fitting them on each log.")

scheduler_option = click.option(
    "--scheduler", metavar="ADDRESS",
    help="Compute on a Dask cluster: a scheduler address such as tcp://host:8786, or "
         "local[:N] for N local worker processes (default 2). Needs evalproto[dask].")

timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT, show_default=True,
    help="Seconds to wait for each reply of an external evaluator; 0 waits for ever.")


# -- analysis and output --------------------------------------------------------------

def analysis_options(command: Callable) -> Callable:
    """The options of every command that reports scores: tests, groups, output."""
    return _apply([
        click.option("-ci", "--confidence", is_flag=True,
                     help="Bootstrap 95% confidence intervals for every system and metric."),
        click.option("-cin", "--confidence-n", type=click.IntRange(min=1), default=1000,
                     show_default=True, help="Bootstrap resamples for --confidence."),
        click.option("-pbs", "--paired-bs", is_flag=True,
                     help="Paired bootstrap test of each system against the first; also "
                          "gives every system's confidence interval."),
        click.option("-pbsn", "--paired-bs-n", type=click.IntRange(min=1), default=1000,
                     show_default=True, help="Resamples for --paired-bs."),
        click.option("-par", "--paired-ar", is_flag=True,
                     help="Paired approximate randomization test of each system against "
                          "the first."),
        click.option("-parn", "--paired-ar-n", type=click.IntRange(min=1), default=10000,
                     show_default=True, help="Trials for --paired-ar."),
        seed_option,
        click.option("--groups", "groups_path", metavar="FILE",
                     help="One line per segment of comma-separated tags; each tag is also "
                          "scored on its own segments."),
        click.option("-f", "--format", "output_format", type=click.Choice(FORMATS),
                     default="text", show_default=True,
                     help="Output: a table, JSON Lines, or TSV."),
        click.option("-w", "--width", type=click.IntRange(min=0), default=1,
                     show_default=True, help="Decimals of the scores in the text table."),
        output_option,
    ], command)


def make_analysis(systems: int, segments: int, confidence: bool, confidence_n: int,
                  paired_bs: bool, paired_bs_n: int, paired_ar: bool, paired_ar_n: int,
                  seed: Optional[int], groups_path: Optional[str]) -> Analysis:
    """The Analysis that the analysis options ask for, checked."""
    if paired_bs and paired_ar:
        raise click.UsageError("choose one of --paired-bs and --paired-ar")
    if (paired_bs or paired_ar) and systems < 2:
        raise click.UsageError("paired tests compare systems: give two or more with -i; "
                               "the first is the baseline")
    return Analysis(
        confidence=confidence_n if confidence else 0,
        paired="bs" if paired_bs else "ar" if paired_ar else None,
        paired_n=paired_bs_n if paired_bs else paired_ar_n, seed=seed,
        groups=read_groups(groups_path, segments) if groups_path else None)


def read_groups(path: str, segments: int) -> List[List[str]]:
    """Each segment's tags, from one line of comma-separated tags per segment."""
    lines = read_lines(path)
    if len(lines) != segments:
        raise InputError(f"{path} has {len(lines)} lines but there are {segments} segments; "
                         f"a groups file needs one line of tags per segment")
    return [[tag.strip() for tag in line.split(",") if tag.strip()] for line in lines]


def write_output(path: str, text: str) -> None:
    """Results go out only once complete: to stdout, or atomically to a file."""
    if path == "-":
        click.echo(text, nl=False)
    else:
        write_atomically(path, text)


def check_sentence_level(sentence_level: bool, analysis: Analysis) -> None:
    if sentence_level and (analysis.bootstrap_n or analysis.paired or analysis.groups):
        raise click.UsageError("--sentence-level prints per-segment scores; it does not "
                               "combine with confidence intervals, paired tests or groups")


def render_scores(tables: Sequence[MetricTable], ids: Sequence[str], nrefs: int | str,
                  analysis: Analysis, sentence_level: bool, output_format: str,
                  width: int) -> str:
    """Each segment's scores (-sl), or the corpus report with what the analysis asks."""
    if sentence_level:
        return format_segments(tables, ids, output_format, width)
    return format_results(analyse(tables, nrefs, analysis), output_format, width)


def distributed_corpus_score(scheduler: str, specs: Sequence[MetricSpec],
                             ref_paths: Sequence[str], hyp_paths: Sequence[str],
                             timeout: float, sentence_level: bool, output_format: str,
                             width: int, output: str, analysis_flags: Dict[str, Any]) -> None:
    """corpus-score with the statistics computed on a Dask cluster."""
    from evalproto import distributed

    try:
        with distributed.connect(scheduler) as client:
            segments, tables = distributed.distributed_tables(client, specs, ref_paths,
                                                              hyp_paths, timeout or None)
            analysis = make_analysis(len(hyp_paths), segments, **analysis_flags)
            check_sentence_level(sentence_level, analysis)
            text = render_scores(tables, segment_ids(segments), len(ref_paths), analysis,
                                 sentence_level, output_format, width)
        write_output(output, text)
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


def split_files(files: Sequence[str], inputs: Sequence[str]) -> Tuple[List[str], List[str]]:
    """Reference and hypothesis paths: REF... HYP, or REF... with -i HYP."""
    if inputs:
        return list(files), list(inputs)
    if len(files) < 2:
        raise click.UsageError("give at least one reference file and a hypothesis file "
                               "(or the hypotheses with -i)")
    return list(files[:-1]), [files[-1]]


def read_any_corpus(data_format: str, ref_paths: Sequence[str], hyp_paths: Sequence[str],
                    ref_field: str, hyp_field: str) -> Corpus:
    if data_format == "text":
        return read_corpus(ref_paths, hyp_paths)
    if len(ref_paths) != 1:
        raise click.UsageError(f"--data-format {data_format} takes one dataset file, then the "
                               f"prediction files")
    if data_format == "dynabench":
        return datasets.read_dynabench(ref_paths[0], hyp_paths, ref_field, hyp_field)
    return datasets.read_oasst(ref_paths[0], hyp_paths, hyp_field)


def segment_ids(count: int, first: int = 1) -> List[str]:
    """Line numbers as segment ids."""
    return [str(first + i) for i in range(count)]


# -- commands -------------------------------------------------------------------------

@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="evalproto")
def main() -> None:
    """Score corpora with pluggable metric evaluators, in process or over the
    SCORE/EVAL protocol."""


@main.command("corpus-score", cls=_OrderedMetricsCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="REF... HYP")
@click.option("-i", "--input", "inputs", multiple=True, metavar="HYP",
              help="A system's hypothesis file; repeat for several systems (the first is "
                   "the baseline of paired tests). With -i, every positional file is a "
                   "reference.")
@metric_options
@click.option("-sl", "--sentence-level", is_flag=True,
              help="Print each segment's score instead of the corpus score.")
@click.option("--data-format", type=click.Choice(datasets.FORMATS), default="text",
              show_default=True,
              help="text: one segment per line. dynabench: a JSON Lines dataset of "
                   "{uid|id, answer, tags} and predictions {id, pred}. oasst: an "
                   "Open-Assistant export (assistant messages are references) and "
                   "predictions {id: message_id, pred}.")
@click.option("--ref-field", default="answer", show_default=True,
              help="dynabench: the field holding the reference(s).")
@click.option("--hyp-field", default="pred", show_default=True,
              help="dynabench, oasst: the field of a prediction row holding its text.")
@scheduler_option
@analysis_options
@click.pass_context
def corpus_score(ctx: click.Context, files: Tuple[str, ...], inputs: Tuple[str, ...],
                 metrics: Tuple[str, ...], evaluators: Tuple[str, ...], timeout: float,
                 jobs: int, sentence_level: bool, data_format: str, ref_field: str, hyp_field: str,
                 scheduler: Optional[str], output_format: str, width: int, output: str,
                 **analysis_flags: Any) -> None:
    """Score hypothesis files against reference files, one segment per line.

    Reference files come first, then the hypothesis file; '-' reads standard input
    and files ending in .gz are decompressed. JSON Lines datasets are joined with
    their predictions on id, and their tags (or languages) are scored as groups.
    """
    ref_paths, hyp_paths = split_files(files, inputs)
    specs = metric_specs(ctx, metrics, evaluators)
    if scheduler:
        if data_format != "text":
            raise click.UsageError("--scheduler partitions plain text files by lines; "
                                   f"--data-format {data_format} runs locally")
        return distributed_corpus_score(scheduler, specs, ref_paths, hyp_paths, timeout,
                                        sentence_level, output_format, width, output,
                                        analysis_flags)
    try:
        corpus = read_any_corpus(data_format, ref_paths, hyp_paths, ref_field, hyp_field)
        analysis = make_analysis(len(hyp_paths), len(corpus.refs), **analysis_flags)
        check_sentence_level(sentence_level, analysis)
        if analysis.groups is None and corpus.tags and any(corpus.tags):
            analysis.groups = corpus.tags
        with ExitStack() as stack:
            sources = [(spec.spec, spec.open(stack, timeout or None, jobs)) for spec in specs]
            tables = stats_tables(sources, corpus.refs, corpus.systems)
            text = render_scores(tables, corpus.ids, corpus.nrefs, analysis, sentence_level,
                                 output_format, width)
        write_output(output, text)
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("stats", cls=_OrderedMetricsCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="REF... HYP")
@metric_options
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The stats file to write (atomically).")
@click.option("--system", help="The system's name in the file; default: the HYP path. Give "
                               "every shard of one system the same name.")
@click.option("--first-id", type=click.IntRange(min=0), default=1, show_default=True,
              help="The id of the first segment (a shard's line offset + 1).")
@scheduler_option
@click.pass_context
def stats(ctx: click.Context, files: Tuple[str, ...], metrics: Tuple[str, ...],
          evaluators: Tuple[str, ...], timeout: float, jobs: int, output: str,
          system: Optional[str], first_id: int, scheduler: Optional[str]) -> None:
    """Write one metric's per-segment statistics of one system, for `evalproto reduce`."""
    ref_paths, (hyp_path,) = split_files(files, ())
    (spec, *others) = metric_specs(ctx, metrics, evaluators)
    if others:
        raise click.UsageError("a stats file holds one metric: give one -m or one -e")
    try:
        with ExitStack() as stack:
            if scheduler:
                from evalproto import distributed
                client = stack.enter_context(distributed.connect(scheduler))
                segments, (table,) = distributed.distributed_tables(
                    client, [spec], ref_paths, [hyp_path], timeout or None)
            else:
                corpus = read_corpus(ref_paths, [hyp_path])
                segments = len(corpus.refs)
                source = spec.open(stack, timeout or None, jobs)
                (table,) = stats_tables([(spec.spec, source)], corpus.refs, corpus.systems)
            header = {"metric": spec.spec, "kind": spec.kind,
                      "signature": table.source.signature(),
                      "stat_names": list(table.stat_names),
                      "higher_is_better": table.source.higher_is_better,
                      "nrefs": len(ref_paths), "system": system or hyp_path}
        write_stats(output, header, segment_ids(segments, first_id), table.rows[hyp_path])
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("reduce", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="STATS_FILE...")
@timeout_option
@analysis_options
def reduce(files: Tuple[str, ...], timeout: float, output_format: str, width: int,
           output: str, **analysis_flags: Any) -> None:
    """Merge stats files and report on them as corpus-score does.

    Every file must come from the same metric with the same signature. The shards of
    a system are joined in the order given, and all systems must cover the same
    segments; the first system is the baseline of paired tests.
    """
    try:
        merged = merge_stats([read_stats(path) for path in files])
        analysis = make_analysis(len(merged.systems), len(merged.ids), **analysis_flags)
        spec = MetricSpec(merged.header["kind"], merged.header["metric"])
        with ExitStack() as stack:
            source = spec.open(stack, timeout or None)
            if source.signature() != merged.header["signature"]:
                raise EvalprotoError(
                    f"the stats files were written with the signature "
                    f"{merged.header['signature']!r}, but {spec.spec!r} here has "
                    f"{source.signature()!r}; their scores would not be comparable")
            table = MetricTable(spec.spec, source, merged.systems)
            text = format_results(analyse([table], merged.header["nrefs"], analysis),
                                  output_format, width)
        write_output(output, text)
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("list", context_settings=CONTEXT)
def list_evaluators() -> None:
    """Show every registered evaluator (built-in or plugin) with its stats and options."""
    for name, entry in sorted(registry.available().items()):
        click.echo(describe_evaluator(name, entry))


def describe_evaluator(name: str, entry: EntryPoint) -> str:
    try:
        evaluator_class = entry.load()
    except Exception as exc:  # a broken plugin must not hide the others
        return f"{name}: cannot be loaded from {entry.value}: {exc}\n"
    direction = "higher is better" if evaluator_class.higher_is_better else "lower is better"
    lines = [f"{name} ({direction}): {evaluator_class.describe()}"]
    try:
        stat_names = " ".join(evaluator_class.from_args([]).stat_names)
    except (click.UsageError, EvalprotoError):
        stat_names = "(depend on the options)"
    lines.append(f"  stats: {stat_names}")
    context = click.Context(click.Command(name))
    for param in evaluator_class.options:
        record = param.get_help_record(context)
        if record is None:  # an argument
            lines.append(f"  {param.human_readable_name}...")
        else:
            lines.append(f"  {record[0]}: {record[1]}" if record[1] else f"  {record[0]}")
    return "\n".join(lines) + "\n"


@main.command("info", context_settings=CONTEXT)
@click.argument("spec")
def info(spec: str) -> None:
    """Print the INFO JSON of an evaluator spec, e.g. "bleu --tokenize intl"."""
    try:
        evaluator = registry.from_spec(spec)
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(evaluator.info(), ensure_ascii=False))


@main.command("lm-score", context_settings=CONTEXT)
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True,
              help="json: one object per log with every key `lmc stats` prints (sorted).")
@click.option("--raw", is_flag=True, help="Sums instead of rates, as `lmc stats --no-human`.")
@rerank_option
@click.option("--by", type=click.Choice(["user", "sentence"]),
              help="Also one row per user (LM Challenge) or sentence (LM Zoo).")
@click.option("--skip-first-token", is_flag=True,
              help="LM Zoo: leave out each sentence's first token (some models report 0).")
@click.option("-ci", "--confidence", is_flag=True,
              help="Bootstrap 95% intervals for every rate, resampling messages (or sentences).")
@click.option("-cin", "--confidence-n", type=click.IntRange(min=1), default=1000,
              show_default=True, help="Bootstrap resamples for --confidence.")
@seed_option
@output_option
@scheduler_option
def lm_score(logs: Tuple[str, ...], output_format: str, raw: bool,
             reranker: Optional[lmlogs.Reranker], by: Optional[str], skip_first_token: bool,
             confidence: bool, confidence_n: int, seed: Optional[int], output: str,
             scheduler: Optional[str]) -> None:
    """Statistics of LM Challenge logs (wc, we, ce, wr) as `lmc stats` computes them, and
    of LM Zoo `get_surprisals` tables (recognised by their header).

    Logs are JSON Lines, gzipped or not; '-' reads standard input.
    """
    resamples = confidence_n if confidence else 0
    try:
        check_inputs(logs, ())
        options = (reranker, raw, skip_first_token, by, resamples, seed)
        if scheduler:
            if STDIN_NAME in logs:
                raise click.UsageError("with --scheduler, workers read the logs: '-' cannot be one")
            from evalproto import distributed
            with distributed.connect(scheduler) as client:
                results = distributed.distributed_lm_summaries(client, logs, *options)
        else:
            results = [summary for path in logs
                       for summary in lmreport.log_summaries(path, *options)]
        write_output(output, lmreport.format_json(results) if output_format == "json"
                     else lmreport.format_text(results))
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("lm-compare", context_settings=CONTEXT)
@click.argument("baseline", metavar="BASELINE_LOG")
@click.argument("other", metavar="LOG")
@click.option("--test", type=click.Choice(["bs", "ar"]), default="bs", show_default=True,
              help="Paired bootstrap (bs) or approximate randomization (ar), over messages.")
@click.option("-n", "--samples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Resamples (bs) or trials (ar).")
@seed_option
@rerank_option
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True)
@output_option
def lm_compare(baseline: str, other: str, test: str, samples: int, seed: Optional[int],
               reranker: Optional[lmlogs.Reranker], output_format: str, output: str) -> None:
    """Paired significance test of every rate between two logs of the same data
    (`lmc diff`, with p-values). Logs whose fingerprints differ are refused."""
    try:
        tables = [lmreport.load_table(path, reranker) for path in (baseline, other)]
        rows = lmreport.compare(*tables, test, samples, seed)
        write_output(output, lmreport.format_json(rows) if output_format == "json"
                     else lmreport.format_comparison_text(rows, baseline, other))
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


main.add_command(__import__("evalproto.sacrebleu_cli").sacrebleu_cli.command)  # `evalproto sacrebleu`
