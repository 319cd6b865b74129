"""The `evalproto` command line."""

from __future__ import annotations

import json
import math
import shlex
from contextlib import ExitStack
from importlib.metadata import EntryPoint
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import click

from evalproto import __version__
from evalproto.cli import sacrebleu
from evalproto.readers import datasets
from evalproto.readers import lmlogs
from evalproto.stats import lmreport
from evalproto.metrics import registry
from evalproto.sources.process import DEFAULT_TIMEOUT
from evalproto.base.errors import EvalprotoError, InputError
from evalproto.cli.launch import METRIC_FLAGS, option_values
from evalproto.base.numerals import parse_number
from evalproto.base.outputs import write_output
from evalproto.readers.text import STDIN as STDIN_NAME
from evalproto.readers.text import Corpus, check_inputs, read_corpus, read_lines
from evalproto.reports.results import FORMATS, format_results, format_segments
from evalproto.stats.resampling import DEFAULT_SEED
from evalproto.stats.reductions import Analysis, MetricTable, analyse, segment_scores, stats_tables
from evalproto.sources.specs import MetricSpec
from evalproto.readers.statsfiles import MetricColumns, StatsFile, merge_stats, read_stats, write_stats

CONTEXT = {"help_option_names": ["-h", "--help"]}


# -- naming metrics -------------------------------------------------------------------

INPUT_FLAGS = ("-i", "--input")


class _OrderedMetricsCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        if any(flag in self._value_options() for flag in INPUT_FLAGS):
            args = spread_inputs(args, self._value_options())
        # click collects each repeated option separately; this keeps their order.
        ctx.meta["metric_order"] = [kind for kind, _ in option_values(args, METRIC_FLAGS)]
        return super().parse_args(ctx, args)

    def _value_options(self) -> set:
        """The option strings of this command that take a value."""
        return {name for param in self.params if isinstance(param, click.Option)
                and not param.is_flag and not param.count for name in param.opts}


def spread_inputs(args: Sequence[str], value_options: set) -> List[str]:
    """sacrebleu's `-i H1 H2 ...`: every word after -i up to the next option is a system,
    given to click as its own `-i`. A file that comes after the systems and another
    option is refused: it would otherwise be read as a reference."""
    words = list(args)
    spread: List[str] = []
    after_inputs = False
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            return spread + words[i - 1:]
        if _is_input_flag(word):
            after_inputs = True
            spread.append(word)
            if word in INPUT_FLAGS and i < len(words) and not _is_option(words[i]):
                spread.append(words[i])  # -i's own value
                i += 1
            while i < len(words) and not _is_option(words[i]):
                spread += [INPUT_FLAGS[0], words[i]]
                i += 1
        elif word in value_options:
            spread += words[i - 1:i + 1]
            i += 1
        elif _is_option(word):
            spread.append(word)
        elif after_inputs:
            raise click.UsageError(
                f"{word!r} comes after -i and another option, so it is neither a system "
                f"nor clearly a reference: give the reference files first, then -i and "
                f"every system (evalproto corpus-score REF... -i HYP...)")
        else:
            spread.append(word)
    return spread


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _is_input_flag(word: str) -> bool:
    return word in INPUT_FLAGS or word.startswith("--input=") or (
        word.startswith("-i") and not word.startswith("--"))


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
    if not (value.isascii() and value.isdigit()):
        raise click.BadParameter(f"expected a whole number >= 0 or 'none', got {value!r}")
    return int(value)


def _reranker(ctx: click.Context, param: click.Parameter,
              value: Optional[str]) -> Optional[lmlogs.Reranker]:
    if value is None:
        return None
    try:
        alpha, beta = (parse_number(part.strip()) for part in value.split(","))
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

def _seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not math.isfinite(value):
        raise click.BadParameter(f"expected a number of seconds (0 waits for ever), got {value}")
    return value


timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT, show_default=True,
    callback=_seconds,
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


def make_analysis(systems: int, ids: Sequence[str], confidence: bool, confidence_n: int,
                  paired_bs: bool, paired_bs_n: int, paired_ar: bool, paired_ar_n: int,
                  seed: Optional[int], groups_path: Optional[str],
                  partial: bool = False) -> Analysis:
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
        groups=read_groups(groups_path, ids, partial) if groups_path else None)


def read_groups(path: str, ids: Sequence[str], partial: bool = False) -> List[List[str]]:
    """Each segment's tags, from a file of one line of comma-separated tags per segment.
    Segments with whole-number ids (line numbers) take the tags of that line, so shards
    reduced in any order get their own tags; other ids (datasets) go by position."""
    lines = read_lines(path)
    numbers = [int(segment) for segment in ids] if all(
        segment.isascii() and segment.isdigit() for segment in ids) else None
    if numbers is None or not partial:
        if len(lines) != len(ids):
            raise InputError(f"{path} has {len(lines)} lines but there are {len(ids)} "
                             f"segments; a groups file needs one line of tags per segment")
    if numbers is None:
        numbers = list(range(1, len(ids) + 1))
    tags = []
    for segment, number in zip(ids, numbers):
        if not 1 <= number <= len(lines):
            raise InputError(f"{path}: no line {number} for segment {segment!r}: a groups "
                             f"file has one line per segment, line N for segment id N")
        tags.append([tag.strip() for tag in lines[number - 1].split(",") if tag.strip()])
    return tags


def check_sentence_level(sentence_level: bool, analysis: Analysis) -> None:
    if sentence_level and (analysis.bootstrap_n or analysis.paired or analysis.groups):
        raise click.UsageError("--sentence-level prints per-segment scores; it does not "
                               "combine with confidence intervals, paired tests or groups")


def render_scores(tables: Sequence[MetricTable], ids: Sequence[str], nrefs: int | str,
                  analysis: Analysis, sentence_level: bool, output_format: str,
                  width: int) -> str:
    """Each segment's scores (-sl), or the corpus report with what the analysis asks."""
    if sentence_level:
        return format_segments(segment_scores(tables, nrefs), ids, output_format, width)
    return format_results(analyse(tables, nrefs, analysis), output_format, width)


def distributed_corpus_score(scheduler: str, specs: Sequence[MetricSpec],
                             ref_paths: Sequence[str], hyp_paths: Sequence[str],
                             timeout: float, sentence_level: bool, output_format: str,
                             width: int, output: str, analysis_flags: Dict[str, Any]) -> None:
    """corpus-score with the statistics computed on a Dask cluster."""
    from evalproto.sources import dask as distributed

    try:
        with distributed.connect(scheduler) as client:
            segments, tables = distributed.distributed_tables(client, specs, ref_paths,
                                                              hyp_paths, timeout or None)
            analysis = make_analysis(len(hyp_paths), segment_ids(segments), **analysis_flags)
            check_sentence_level(sentence_level, analysis)
            text = render_scores(tables, segment_ids(segments), len(ref_paths), analysis,
                                 sentence_level, output_format, width)
        write_output(output, text)
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


def check_scheduler(jobs: int, paths: Sequence[str]) -> None:
    """--scheduler runs on a cluster whose workers read the files themselves."""
    if jobs > 1:
        raise click.UsageError("-j runs copies on this machine, and --scheduler on the Dask "
                               "cluster's workers: choose one")
    if STDIN_NAME in paths:
        raise click.UsageError("with --scheduler, the workers read the files: standard input "
                               "('-') cannot be one")


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
@click.option("-i", "--input", "inputs", multiple=True, metavar="HYP...",
              help="The systems' hypothesis files, as in sacrebleu: -i A B C, or -i A -i B "
                   "(the first is the baseline of paired tests). With -i, every file before "
                   "it is a reference.")
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
        check_scheduler(jobs, [*ref_paths, *hyp_paths])
        if data_format != "text":
            raise click.UsageError("--scheduler partitions plain text files by lines; "
                                   f"--data-format {data_format} runs locally")
        return distributed_corpus_score(scheduler, specs, ref_paths, hyp_paths, timeout,
                                        sentence_level, output_format, width, output,
                                        analysis_flags)
    try:
        corpus = read_any_corpus(data_format, ref_paths, hyp_paths, ref_field, hyp_field)
        analysis = make_analysis(len(hyp_paths), corpus.ids, **analysis_flags)
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
              help="The stats file to write (atomically); '-' for standard output.")
@click.option("--system", help="The system's name in the file; default: the HYP path. Give "
                               "every shard of one system the same name.")
@click.option("--first-id", type=click.IntRange(min=1), default=1, show_default=True,
              help="The id of the first segment (a shard's line offset + 1).")
@scheduler_option
@click.pass_context
def stats(ctx: click.Context, files: Tuple[str, ...], metrics: Tuple[str, ...],
          evaluators: Tuple[str, ...], timeout: float, jobs: int, output: str,
          system: Optional[str], first_id: int, scheduler: Optional[str]) -> None:
    """Write the per-segment statistics of one system under one or more metrics, for
    `evalproto reduce`."""
    ref_paths, (hyp_path,) = split_files(files, ())
    specs = metric_specs(ctx, metrics, evaluators)
    if scheduler:
        check_scheduler(jobs, files)
    try:
        with ExitStack() as stack:
            if scheduler:
                from evalproto.sources import dask as distributed
                client = stack.enter_context(distributed.connect(scheduler))
                segments, tables = distributed.distributed_tables(
                    client, specs, ref_paths, [hyp_path], timeout or None)
            else:
                corpus = read_corpus(ref_paths, [hyp_path])
                segments = len(corpus.refs)
                sources = [(spec.spec, spec.open(stack, timeout or None, jobs)) for spec in specs]
                tables = stats_tables(sources, corpus.refs, corpus.systems)
            columns = [MetricColumns(spec.spec, spec.kind, table.source.signature(),
                                     table.stat_names, table.source.higher_is_better)
                       for spec, table in zip(specs, tables)]
        write_stats(output, system or hyp_path, len(ref_paths), columns,
                    segment_ids(segments, first_id), [table.rows[hyp_path] for table in tables])
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("reduce", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="STATS_FILE...")
@click.option("-e", "--evaluator", "evaluators", multiple=True, metavar="CMD",
              help="The command of a metric the files were written with -e: a stats file "
                   "is data, and no command named in it is run. Repeat for several, in the "
                   "files' order.")
@timeout_option
@click.option("--partial", is_flag=True,
              help="Reduce the segments that are there even if shards are missing.")
@analysis_options
def reduce(files: Tuple[str, ...], evaluators: Tuple[str, ...], timeout: float, partial: bool,
           output_format: str, width: int, output: str, **analysis_flags: Any) -> None:
    """Merge stats files and report on them as corpus-score does.

    Every file must hold the same metrics with the same signatures. The shards of a
    system are joined on their segment ids, all systems must cover the same segments,
    and a segment that no shard holds is an error (unless --partial); the first system
    is the baseline of paired tests.
    """
    try:
        stats_files = [read_stats(path) for path in files]
        merged = merge_stats(stats_files, partial)
        analysis = make_analysis(len(merged.systems), merged.ids, partial=partial,
                                 **analysis_flags)
        commands = iter(evaluators)
        with ExitStack() as stack:
            tables = []
            for number, metric in enumerate(merged.metrics):
                spec = MetricSpec(metric.kind, _reduce_spec(metric, commands))
                source = spec.open(stack, timeout or None)
                if source.signature() != metric.signature:
                    raise EvalprotoError(
                        f"the stats files were written with the signature "
                        f"{metric.signature!r}, but {spec.spec!r} here has "
                        f"{source.signature()!r}; their scores would not be comparable")
                for stats_file in stats_files:
                    check_rows(source, stats_file, number)
                tables.append(MetricTable(metric.spec, source, {
                    system: rows[number] for system, rows in merged.systems.items()}))
            extra = list(commands)
            if extra:
                raise click.UsageError(f"-e {extra[0]!r}: the stats files hold no other "
                                       f"metric written by a command")
            text = format_results(analyse(tables, merged.nrefs, analysis), output_format, width)
        write_output(output, text)
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


def _reduce_spec(metric: MetricColumns, commands: Iterator[str]) -> str:
    """What to run for a metric of the files: its spec if it runs in process, or the
    next command the user named (never the command written in the file)."""
    if metric.kind == "metric":
        return metric.spec
    command = next(commands, None)
    if command is None:
        raise click.UsageError(
            f"the stats files were written by the evaluator command {metric.spec!r}. A stats "
            f"file is data, and evalproto runs no command named in data: to reduce them, "
            f"name the command yourself: evalproto reduce -e {shlex.quote(metric.spec)} ...")
    return command


def check_rows(source: Any, stats_file: StatsFile, number: int) -> None:
    """Refuse rows that the metric could not have written (a row with more matches than
    n-grams, a negative length); they would move the score without a word."""
    if not hasattr(source, "broken_rule"):
        return  # an external evaluator declares no rules
    broken = source.broken_rule(stats_file.rows[number])
    if broken is not None:
        row, rule = broken
        raise InputError(f"{stats_file.path}: line {stats_file.first_line + row}: these "
                         f"{stats_file.metrics[number].spec} statistics are impossible: "
                         f"they break {rule}")


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
            check_scheduler(1, logs)
            from evalproto.sources import dask as distributed
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


main.add_command(sacrebleu.command)
