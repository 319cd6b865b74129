"""The `evalproto` command line: option declarations over evalproto's public API."""

from __future__ import annotations

import contextlib
import importlib
import json
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import click

import evalproto
from evalproto.api import commandline as api
from evalproto.cli import pipes
from evalproto.cli.options import (
    CONTEXT,
    Decimals,
    MetricsCommand,
    WholeNumbers,
    analysis_from,
    analysis_options,
    check_command,
    check_paths,
    metric_options,
    metric_options_with_default,
    metric_specs,
    named_systems,
    names_option,
    output_option,
    paired_ttest_option,
    reports_errors,
    rerank_option,
    sacrebleu_flag_options,
    scheduler_option,
    score_only_option,
    seed_option,
    systems_option,
    timeout_option,
    writes,
)
from evalproto.cli.progress import TerminalProgress
from evalproto.cli.words import GREEDY_FLAGS

LAZY_COMMANDS = {"sacrebleu": "evalproto.cli.sacrebleu", "serve": "evalproto.cli.serve",
                 "board": "evalproto.cli.board", "jsonl": "evalproto.cli.jsonl",
                 "perturb": "evalproto.cli.perturb"}
"""Commands whose module (holding `command`) is imported only when they run or are
listed: sacrebleu's parser and what it imports would slow every other command's start."""


class Commands(click.Group):
    """evalproto's commands, for which a reader that stops early (`evalproto list | head
    -1`) is no error: the rest of the output is dropped and the exit status is 0, where
    click would exit with 1."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name in LAZY_COMMANDS:
            return importlib.import_module(LAZY_COMMANDS[name]).command
        return super().get_command(ctx, name)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _reader_may_go():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _reader_may_go():
            return super().invoke(ctx)


@contextlib.contextmanager
def _reader_may_go() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        if not pipes.stdout_reader_gone():
            raise
        pipes.drop_stdout()
        raise click.exceptions.Exit(0) from None


@click.group(cls=Commands, context_settings=CONTEXT)
@click.version_option(evalproto.__version__, "-V", "--version", prog_name="evalproto")
def main() -> None:
    """Score corpora with pluggable metric evaluators, in process or over the
    SCORE/EVAL protocol."""


def split_files(files: Sequence[str], inputs: Sequence[str]) -> Tuple[List[str], List[str]]:
    """Reference and hypothesis paths: REF... HYP, or REF... with -i HYP..."""
    check_paths([*files, *inputs])
    if inputs:
        return list(files), list(inputs)
    if len(files) < 2:
        raise click.UsageError("give at least one reference file and a hypothesis file "
                               "(or the hypotheses with -i)")
    return list(files[:-1]), [files[-1]]


def check_sentence_level(sentence_level: bool, analysis: Any, groups: Any) -> None:
    if sentence_level and (analysis.bootstrap_n or analysis.paired or groups):
        raise click.UsageError("--sentence-level prints per-segment scores; it does not "
                               "combine with confidence intervals, paired tests or groups")


def check_score_only(score_only: bool, output_format: str) -> None:
    if score_only and output_format != "text":
        raise click.UsageError(f"-b prints bare scores, one per line; it does not combine "
                               f"with -f {output_format}")


def render(comparison: Any, output_format: str, width: int, score_only: bool,
           progress: TerminalProgress) -> str:
    """The report's text, made under a progress phase of its own (its bar, if the
    report is slow to make, is gone before the report is written)."""
    phase = progress.start("report", 1)
    if comparison.segments:
        text = api.format_segments(comparison.segments, comparison.ids, output_format,
                                         width, score_only)
    elif score_only:
        text = api.format_scores(comparison.results, width)
    else:
        text = api.format_results(comparison.results, output_format, width)
    phase.advance()
    phase.close()
    return text


@main.command("corpus-score", cls=MetricsCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="REF... HYP")
@systems_option
@metric_options
@sacrebleu_flag_options
@click.option("-sl", "--sentence-level", is_flag=True,
              help="Print each segment's score instead of the corpus score.")
@score_only_option
@click.option("--data-format", type=click.Choice(["text", "dynabench", "oasst"]),
              default=None, show_default="text",
              help="text: one segment per line. dynabench: a JSON Lines dataset of "
                   "{uid|id, answer, tags} and predictions {id, pred}. oasst: an "
                   "Open-Assistant export (assistant messages are references) and "
                   "predictions {id: message_id, pred}.")
@click.option("--ref-field", default="answer", show_default=True,
              help="dynabench: the field holding the reference(s).")
@click.option("--hyp-field", default="pred", show_default=True,
              help="dynabench, oasst: the field of a prediction row holding its text.")
@names_option
@scheduler_option
@analysis_options
@click.pass_context
@reports_errors
@writes(["output"], reads=["files", "inputs", "groups_path"])
def corpus_score(ctx: click.Context, files: Tuple[str, ...], inputs: Tuple[str, ...],
                 metrics: Tuple[str, ...], evaluators: Tuple[str, ...],
                 timeout: Optional[float], jobs: int, sentence_level: bool, score_only: bool,
                 data_format: Optional[str], ref_field: str, hyp_field: str,
                 names: Optional[str],
                 scheduler: Optional[str],
                 groups_path: Optional[str], output_format: str, width: int, output: str,
                 **analysis_flags: Any) -> None:
    """Score hypothesis files against reference files, one segment per line.

    Reference files come first, then the hypothesis file; '-' reads standard input
    and files ending in .gz are decompressed. JSON Lines datasets are joined with
    their predictions on id, and their tags (or languages) are scored as groups.
    """
    ref_paths, hyp_paths = split_files(files, inputs)
    hyp_paths, system_names = named_systems(hyp_paths, names)
    specs = metric_specs(ctx, metrics, evaluators)
    analysis = analysis_from(len(hyp_paths), **analysis_flags)
    check_sentence_level(sentence_level, analysis, groups_path)
    check_score_only(score_only, output_format)
    progress = TerminalProgress()
    comparison = evalproto.score_files(
        ref_paths, hyp_paths, specs, analysis, jobs=jobs, timeout=timeout,
        sentence_level=sentence_level, data_format=data_format, ref_field=ref_field,
        hyp_field=hyp_field, groups=groups_path, names=system_names, scheduler=scheduler,
        progress=progress)
    api.write_output(output, render(comparison, output_format, width, score_only,
                                          progress))


@main.command("stats", cls=MetricsCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="REF... HYP")
@metric_options
@sacrebleu_flag_options
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The stats file to write (atomically); '-' for standard output.")
@click.option("--system", help="The system's name in the file; default: the HYP path. Give "
                               "every shard of one system the same name.")
@click.option("--first-id", type=WholeNumbers(min=1), default=1, show_default=True,
              help="The id of the first segment (a shard's line offset + 1).")
@scheduler_option
@click.pass_context
@reports_errors
@writes(["output"], reads=["files"])
def stats(ctx: click.Context, files: Tuple[str, ...], metrics: Tuple[str, ...],
          evaluators: Tuple[str, ...], timeout: Optional[float], jobs: int, output: str,
          system: Optional[str], first_id: int, scheduler: Optional[str]) -> None:
    """Write the per-segment statistics of one system under one or more metrics, for
    `evalproto reduce`."""
    ref_paths, (hyp_path,) = split_files(files, ())
    specs = metric_specs(ctx, metrics, evaluators)
    columns, ids, rows = api.file_stats(
        ref_paths, hyp_path, specs, first_id=first_id, jobs=jobs, timeout=timeout,
        scheduler=scheduler, progress=TerminalProgress())
    api.write_stats(output, system or hyp_path, len(ref_paths), columns, ids, rows)


@main.command("reduce", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="STATS_FILE...")
@click.option("-e", "--evaluator", "evaluators", multiple=True, metavar="CMD",
              help="The command of a metric the files were written with -e: a stats file "
                   "is data, and no command named in it is run. Repeat for several, in the "
                   "files' order.")
@timeout_option
@click.option("--partial", is_flag=True,
              help="Reduce the segments that are there even if shards are missing.")
@score_only_option
@analysis_options
@reports_errors
@writes(["output"], reads=["files", "groups_path"])
def reduce(files: Tuple[str, ...], evaluators: Tuple[str, ...], timeout: Optional[float],
           partial: bool, score_only: bool, groups_path: Optional[str], output_format: str,
           width: int, output: str, **analysis_flags: Any) -> None:
    """Merge stats files and report on them as corpus-score does.

    Every file must hold the same metrics with the same signatures. The shards of a
    system are joined on their segment ids, all systems must cover the same segments,
    and a segment that no shard holds is an error (unless --partial); the first system
    is the baseline of paired tests.
    """
    analysis = analysis_from(None, **analysis_flags)
    check_score_only(score_only, output_format)
    for command in evaluators:
        check_command(command)
    progress = TerminalProgress()
    comparison = evalproto.reduce_stats(files, evaluators, analysis, partial, timeout,
                                        groups_path, progress)
    api.write_output(output, render(comparison, output_format, width, score_only,
                                          progress))


@main.command("report", cls=MetricsCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="REF... [HYP]")
@systems_option
@click.option("--stats", "from_stats", is_flag=True,
              help="The files are stats files (evalproto stats, evalproto import-scores), "
                   "of one or more metrics; the report then has no text analyses.")
@metric_options_with_default("bleu and chrf")
@names_option
@click.option("--data-format", type=click.Choice(["text", "dynabench", "oasst"]),
              default=None, show_default="text",
              help="As corpus-score's; a dataset's tags are the groups.")
@click.option("--source", "source_path", metavar="FILE",
              help="The segments' sources, one per line, shown beside the largest wins "
                   "and losses.")
@click.option("--groups", "groups_path", metavar="FILE",
              help="One line per segment of comma-separated tags: each tag's scores, and "
                   "those of the untagged segments.")
@click.option("--freq-corpus", "freq_corpus", metavar="FILE",
              help="compare-mt's word frequencies are counted in this file (its "
                   "freq_corpus_file) instead of the reference.")
@click.option("-pbsn", "--paired-bs-n", "samples", type=WholeNumbers(min=1), default=1000,
              show_default=True,
              help="Bootstrap resamples behind every interval, paired bootstrap test and "
                   "distribution.")
@click.option("-par", "--paired-ar", is_flag=True,
              help="Also test every pair of systems by approximate randomization.")
@click.option("-parn", "--paired-ar-n", type=WholeNumbers(min=1), default=10000,
              show_default=True, help="Trials for --paired-ar.")
@paired_ttest_option
@seed_option
@click.option("--examples", type=WholeNumbers(min=0), default=10, show_default=True,
              help="How many of the largest wins and losses to show.")
@click.option("-w", "--width", type=WholeNumbers(min=0, max=99), default=1,
              show_default=True, help="Decimals of scores of 10 and more (smaller scores "
                                      "get more).")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The HTML page to write ('-': standard output).")
@click.option("--latex", "latex_path", metavar="FILE",
              help="Also write the score and significance tables as LaTeX (booktabs).")
@click.option("--json", "json_path", metavar="FILE",
              help="Also write every figure of the page as JSON.")
@click.pass_context
@reports_errors
@writes(["output", "latex_path", "json_path"],
        reads=["files", "inputs", "source_path", "groups_path", "freq_corpus"])
def report(ctx: click.Context, files: Tuple[str, ...], inputs: Tuple[str, ...],
           from_stats: bool, metrics: Tuple[str, ...], evaluators: Tuple[str, ...],
           timeout: Optional[float], jobs: int, names: Optional[str],
           data_format: Optional[str],
           source_path: Optional[str], groups_path: Optional[str], freq_corpus: Optional[str],
           samples: int, paired_ar: bool, paired_ar_n: int, paired_ttest: bool,
           seed: Optional[int], examples: int, width: int, output: str,
           latex_path: Optional[str], json_path: Optional[str]) -> None:
    """Compare systems in one self-contained HTML page: scores with confidence
    intervals, all-pairs significance and clusters, groups, compare-mt's analyses,
    segment scores with the largest wins and losses, and bootstrap distributions.

    The default metrics are BLEU and chrF. With --stats, the files are stats files and
    the page has the figures that need no text.
    """
    options = evalproto.ReportOptions(samples=samples, paired_ar=paired_ar,
                                      ar_trials=paired_ar_n, ttest=paired_ttest, seed=seed,
                                      examples=examples)
    progress = TerminalProgress()
    if from_stats:
        given = [option for option, value in (
            ("-i", inputs), ("-m", metrics), ("--names", names), ("--source", source_path),
            ("--freq-corpus", freq_corpus), ("--data-format", data_format not in (None, "text")),
            ("-j", jobs > 1)) if value]
        if given:
            raise click.UsageError(f"with --stats the files hold the systems, their names "
                                   f"and metrics, and no text: {given[0]} does not apply")
        result = evalproto.report_from_stats(files, evaluators, options, groups_path,
                                             timeout=timeout, progress=progress)
    else:
        ref_paths, hyp_paths = split_files(files, inputs)
        hyp_paths, system_names = named_systems(hyp_paths, names)
        specs = (metric_specs(ctx, metrics, evaluators) if metrics or evaluators
                 else list(api.REPORT_METRICS))
        corpus = evalproto.read_dataset(data_format, ref_paths, hyp_paths, progress=progress,
                                        names=system_names)
        result = evalproto.report_corpus(corpus, specs, options, groups=groups_path,
                                         source=source_path,
                                         freq_corpus=freq_corpus, jobs=jobs, timeout=timeout,
                                         progress=progress)
    pages = [(output, evalproto.format_report(result, "html", width, progress))]
    if latex_path:
        pages.append((latex_path, evalproto.format_report(result, "latex", width)))
    if json_path:
        pages.append((json_path, evalproto.format_report(result, "json")))
    for path, text in pages:
        api.write_output(path, text)


@main.command("mbr", context_settings=CONTEXT)
@click.argument("candidates", metavar="CANDIDATES.jsonl")
@click.option("-m", "--metric", default="chrf", show_default=True, metavar="SPEC",
              help='The utility: a built-in evaluator spec, e.g. bleu, ter or "chrf '
                   '--word-order 2" (chrF++). BLEU, chrF and TER score their all-pairs '
                   'matrices with compiled kernels; other metrics pair by pair.')
@click.option("-e", "--evaluator", metavar="CMD",
              help="The utility as an external evaluator command, over the protocol, "
                   "instead of -m (pair by pair: slow).")
@timeout_option
@click.option("--references", metavar="FILE",
              help="Pseudo-references apart from the candidates: JSON Lines, a list of "
                   "strings a line, line by line with CANDIDATES.")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True,
              help='text: the chosen candidate of each line; json: {"index", "text", '
                   '"expected"} a line.')
@output_option
@click.pass_context
@reports_errors
@writes(["output"], reads=["candidates", "references"])
def mbr(ctx: click.Context, candidates: str, metric: str, evaluator: Optional[str],
        timeout: Optional[float], references: Optional[str], output_format: str,
        output: str) -> None:
    """Minimum Bayes risk decoding: of each line's candidates (a JSON list of strings a
    line; '-' reads standard input), the one with the best mean score against all of
    the line's candidates, itself included (or against --references), the first of
    equals; one line out per line in.

    Each score is sacrebleu's sentence score (BLEU with effective order); TER, where
    lower is better, chooses the lowest mean.
    """
    if evaluator is not None:
        if ctx.get_parameter_source("metric") is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError("give the metric once: -m SPEC or -e CMD")
        check_command(evaluator)
        utility = evalproto.load(command=evaluator, timeout=timeout)
    else:
        utility = evalproto.load(metric)
    with utility:
        choices = api.mbr_files(candidates, utility, references, progress=TerminalProgress())
    api.write_output(output, api.format_choices(choices, output_format))


@main.command("import-scores", context_settings=CONTEXT)
@click.argument("file", metavar="FILE")
@click.option("--metric", required=True, metavar="NAME",
              help="The metric's name, e.g. COMET.")
@click.option("--system", required=True, help="The system's name in the stats file.")
@click.option("--signature", default="", metavar="TEXT",
              help="The metric's own signature (model, version), kept in the stats file: "
                   "only files of the same signature are reduced together.")
@click.option("--field", metavar="F",
              help="JSON Lines: the field holding each segment's score. comet-score's "
                   "output of several files: the file whose scores to import.")
@click.option("--lower-is-better", is_flag=True, help="A lower score is better (MetricX).")
@click.option("--nrefs", type=WholeNumbers(min=1), default=1, show_default=True,
              help="The references the scores were computed with (for the signature).")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The stats file to write (atomically); '-' for standard output.")
@reports_errors
@writes(["output"], reads=["file"])
def import_scores(file: str, metric: str, system: str, signature: str, field: Optional[str],
                  lower_is_better: bool, nrefs: int, output: str) -> None:
    """Turn segment scores computed elsewhere (COMET, BLEURT, MetricX, human judgements)
    into a stats file, for reduce and report --stats: intervals, paired tests, groups.

    FILE holds one score per segment, in segment order: one number per line, JSON
    Lines (with --field), or comet-score's output. The metric is the mean of the
    scores, with (sum, sum of squares, count) per segment.
    """
    columns, ids, rows = api.import_scores(file, metric, signature, field,
                                                 lower_is_better)
    api.write_stats(output, system, nrefs, columns, ids, rows)


@main.command("list", context_settings=CONTEXT)
def list_evaluators() -> None:
    """Show every registered evaluator (built-in or plugin) with its stats and options."""
    for name in sorted(evalproto.registered_evaluators()):
        click.echo(evalproto.describe_evaluator(name))


@main.command("info", context_settings=CONTEXT)
@click.argument("spec")
@reports_errors
def info(spec: str) -> None:
    """Print the INFO JSON of an evaluator spec, e.g. "bleu --tokenize intl"."""
    click.echo(json.dumps(evalproto.info(spec), ensure_ascii=False))


def zoo_reading(command: Any) -> Any:
    """How an LM Zoo predictions file is read, for lm-score and lm-compare."""
    command = click.option(
        "--candidates", type=WholeNumbers(min=1), default=100, show_default=True, metavar="N",
        help="LM Zoo predictions: a token ranked beyond N is a miss, as in a wc log "
             "holding N predictions.")(command)
    return click.option(
        "--log-base", type=click.Choice(["2", "e", "10"]), default="e", show_default=True,
        help="LM Zoo predictions: the base of their log-probabilities.")(command)


@main.command("lm-score", context_settings=CONTEXT)
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True,
              help="json: one object per log with every key `lmc stats` prints (sorted).")
@click.option("--raw", is_flag=True, help="Sums instead of rates, as `lmc stats --no-human`.")
@rerank_option
@click.option("--by", type=click.Choice(["user", "sentence", "word"]),
              help="Also one row per user (LM Challenge) or sentence (LM Zoo), or per word "
                   "(LM Zoo predictions, with --text): its tokens' surprisals summed.")
@click.option("--skip-first-token", is_flag=True,
              help="LM Zoo: leave out each sentence's first token (some models report 0).")
@zoo_reading
@click.option("--spec", metavar="SPEC.json",
              help="LM Zoo predictions: the model's spec (name, tokenizer, vocabulary).")
@click.option("--unkify", metavar="FILE",
              help="LM Zoo predictions: the model's unkify output (0/1 per token); reports "
                   "the share of unknown tokens.")
@click.option("--skip-unk", is_flag=True, help="Leave the unknown tokens of --unkify out.")
@click.option("--tokenize", metavar="FILE",
              help="LM Zoo predictions: the model's tokenize output, checked against them.")
@click.option("--text", metavar="FILE",
              help="LM Zoo predictions: the sentences the model read, one per line (--by word).")
@click.option("-ci", "--confidence", is_flag=True,
              help="Bootstrap 95% intervals for every rate, resampling messages (or sentences).")
@click.option("-cin", "--confidence-n", type=WholeNumbers(min=1), default=1000,
              show_default=True, help="Bootstrap resamples for --confidence.")
@seed_option
@output_option
@scheduler_option
@reports_errors
@writes(["output"], reads=["logs", "spec", "unkify", "tokenize", "text"])
def lm_score(logs: Tuple[str, ...], output_format: str, raw: bool,
             reranker: Optional[Tuple[float, float]], by: Optional[str],
             skip_first_token: bool, log_base: str, candidates: int, spec: Optional[str],
             unkify: Optional[str], skip_unk: bool, tokenize: Optional[str],
             text: Optional[str], confidence: bool, confidence_n: int, seed: Optional[int],
             output: str, scheduler: Optional[str]) -> None:
    """Statistics of LM Challenge logs (wc, we, ce, wr) as `lmc stats` computes them, of
    LM Zoo `get_surprisals` tables (recognised by their header) and of LM Zoo
    `get_predictions.hdf5` files (recognised by their content).

    Logs are JSON Lines, gzipped or not; '-' reads standard input.
    """
    scores = evalproto.lm_score(logs, by=by, confidence=confidence_n if confidence else 0,
                                seed=seed, reranker=reranker, raw=raw,
                                skip_first_token=skip_first_token, log_base=log_base,
                                candidates=candidates, spec=spec, unkify=unkify,
                                skip_unk=skip_unk, tokenize=tokenize, text=text,
                                scheduler=scheduler, progress=TerminalProgress())
    records = [record for score in scores for record in score.to_dict()]
    api.write_output(output, api.format_lm_json(records) if output_format == "json"
                           else api.format_lm_text(records))


@main.command("lm-compare", context_settings=CONTEXT)
@click.argument("baseline", metavar="BASELINE_LOG")
@click.argument("other", metavar="LOG")
@click.option("--test", type=click.Choice(["bs", "ar"]), default="bs", show_default=True,
              help="Paired bootstrap (bs) or approximate randomization (ar), over messages.")
@click.option("-n", "--samples", type=WholeNumbers(min=1), default=1000, show_default=True,
              help="Resamples (bs) or trials (ar).")
@seed_option
@rerank_option
@zoo_reading
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True)
@output_option
@reports_errors
@writes(["output"], reads=["baseline", "other"])
def lm_compare(baseline: str, other: str, test: str, samples: int, seed: Optional[int],
               reranker: Optional[Tuple[float, float]], log_base: str, candidates: int,
               output_format: str, output: str) -> None:
    """Paired significance test of every rate between two logs of the same data
    (`lmc diff`, with p-values), or two LM Zoo predictions files of the same tokens.
    Logs whose fingerprints differ are refused."""
    comparison = evalproto.lm_compare(baseline, other, test, samples, seed, reranker,
                                      TerminalProgress(), log_base=log_base,
                                      candidates=candidates)
    api.write_output(output, api.format_lm_json(comparison.rows)
                           if output_format == "json" else
                           api.format_lm_comparison(comparison.rows, baseline, other))



META_STATISTICS = ("pearson", "spearman", "kendall", "kendall-c", "kendall-like", "tau23",
                   "acc23", "pairwise-accuracy", "acc23-opt", "tau23-opt", "pce")
"""evalproto.META_STATISTICS, written out: the command line starts before numpy loads."""


class MetaEvalCommand(MetricsCommand):
    """meta-eval takes every word after --refs and --hyps too, as after -i and -m."""

    greedy = {**GREEDY_FLAGS, "--refs": "--refs", "--hyps": "--hyps"}


@main.command("meta-eval", cls=MetaEvalCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="HUMAN [METRIC...]")
@metric_options_with_default("none (only METRIC files)")
@sacrebleu_flag_options
@click.option("--refs", multiple=True, metavar="REF...",
              help="-m metrics: the reference files, one segment per line.")
@click.option("--hyps", multiple=True, metavar="HYP...",
              help="-m metrics: each system's output file, a system named by its file name "
                   "without extension (or NAME=FILE), as the HUMAN file names it.")
@names_option
@click.option("--data-format", type=click.Choice(["mt-metrics-eval", "oasst"]),
              default="mt-metrics-eval", show_default=True,
              help="mt-metrics-eval: score files of SYSTEM<TAB>SCORE lines (None: missing). "
                   "oasst: HUMAN is an Open-Assistant export and each METRIC a file of "
                   '{"message_id", "score"} lines.')
@click.option("--label", metavar="NAME",
              help="oasst: judge replies by this label's value (e.g. quality) instead of "
                   "their rank among siblings.")
@click.option("--statistic", type=click.Choice(META_STATISTICS), default=None,
              show_default="pearson; for oasst ranks, pairwise-accuracy",
              help="How agreement is measured, as mt-metrics-eval defines it.")
@click.option("--average-by", type=click.Choice(["none", "sys", "item"]), default=None,
              show_default="none; for oasst ranks, item",
              help="One row of every score, a row per system, or a row per item (segment).")
@click.option("--epsilon", type=Decimals(min=0), default=0.0, show_default=True,
              help="tau23, acc23: metric scores this close are a tie.")
@click.option("--threshold", type=Decimals(min=0, min_open=True), default=25.0,
              show_default=True,
              help="kendall-like: human scores closer than this are not compared (WMT's 25).")
@click.option("--sample-rate", type=Decimals(min=0, max=1, min_open=True), default=1.0,
              show_default=True,
              help="acc23-opt, tau23-opt: the share of pairs that tie calibration samples.")
@click.option("--replace-nans-with-zeros", is_flag=True,
              help="Average a row without a value (a constant row's Pearson) as 0 instead "
                   "of leaving it out.")
@click.option("--perm-both", type=WholeNumbers(min=0), default=0, show_default=True,
              metavar="K",
              help="Test every pair of metrics by PERM-BOTH with K resamples, and rank them "
                   "in clusters.")
@seed_option
@click.option("--block-size", type=WholeNumbers(min=1), default=1000, show_default=True,
              help="--perm-both's early stop: checked every so many resamples.")
@click.option("--early-min", type=Decimals(min=0, max=1), default=0.02, show_default=True,
              help="--perm-both stops early at a p-value below this.")
@click.option("--early-max", type=Decimals(min=0, max=1), default=0.5, show_default=True,
              help="--perm-both stops early at a p-value above this.")
@click.option("--pval", type=Decimals(min=0, max=1), default=0.05, show_default=True,
              help="The p-value at or below which a metric starts a new rank cluster.")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json", "latex"]),
              default="text", show_default=True,
              help="A table, JSON Lines (an object per metric), or a LaTeX table.")
@output_option
@click.pass_context
@reports_errors
@writes(["output"], reads=["files", "refs", "hyps"])
def meta_eval(ctx: click.Context, files: Tuple[str, ...], metrics: Tuple[str, ...],
              evaluators: Tuple[str, ...], timeout: Optional[float], jobs: int,
              refs: Tuple[str, ...], hyps: Tuple[str, ...], names: Optional[str],
              data_format: str, label: Optional[str], output_format: str, output: str,
              **options: Any) -> None:
    """How well metrics agree with human judgements, as mt-metrics-eval (WMT's Metrics
    task) measures it, and which agree significantly better (PERM-BOTH).

    HUMAN and each METRIC are mt-metrics-eval score files: SYSTEM<TAB>SCORE a line, each
    system's segments in order (one line a system for system-level scores), None where
    there is no human score. -m metrics are scored here, segment by segment, on --hyps
    against --refs. With --data-format oasst, HUMAN is an Open-Assistant export whose
    replies are judged by their rank among siblings (or by --label).
    """
    specs = metric_specs(ctx, metrics, evaluators) if metrics or evaluators else []
    hyp_paths, system_names = list(hyps), None
    if hyps:
        hyp_paths, given = named_systems(hyps, names)
        if given is not None:
            system_names = [name if names is not None or name != path else api.system_name(path)
                            for name, path in zip(given, hyps)]
    elif names is not None:
        raise click.UsageError("--names names the --hyps systems; give --hyps")
    result = evalproto.meta_eval_files(
        files, specs, list(refs), hyp_paths, system_names, data_format=data_format,
        label=label, jobs=jobs, timeout=timeout, **options)
    api.write_output(output, api.format_meta_evaluation(result, output_format))
