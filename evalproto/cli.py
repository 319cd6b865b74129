"""The `evalproto` command line."""

from __future__ import annotations

import json
from contextlib import ExitStack
from importlib.metadata import EntryPoint
from typing import List, Optional, Sequence, Tuple

import click

from evalproto import __version__, registry
from evalproto.client import DEFAULT_TIMEOUT, EvaluatorProcess
from evalproto.errors import EvalprotoError
from evalproto.outputs import write_atomically
from evalproto.readers import read_corpus
from evalproto.reports import FORMATS, format_results
from evalproto.scoring import StatsSource, score_corpus

CONTEXT = {"help_option_names": ["-h", "--help"]}
_METRIC_FLAGS = {"-m": "metric", "--metric": "metric", "-e": "evaluator", "--evaluator": "evaluator"}


def metric_order(args: Sequence[str]) -> List[str]:
    """Which of -m and -e came in which order on the command line, one entry per use,
    because click collects each repeated option separately."""
    order = []
    words = iter(args)
    for word in words:
        if word == "--":
            break
        name, equals, _ = word.partition("=")
        if name in _METRIC_FLAGS:
            order.append(_METRIC_FLAGS[name])
            if not equals:
                next(words, None)
        elif word[:2] in ("-m", "-e") and not word.startswith("--"):
            order.append(_METRIC_FLAGS[word[:2]])
    return order


class _OrderedMetricsCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        ctx.meta["metric_order"] = metric_order(args)
        return super().parse_args(ctx, args)


def open_sources(stack: ExitStack, order: Sequence[str], metrics: Sequence[str],
                 evaluators: Sequence[str], timeout: Optional[float]
                 ) -> List[Tuple[str, StatsSource]]:
    """Build every metric, in command-line order; processes are closed by `stack`."""
    specs = {"metric": iter(metrics), "evaluator": iter(evaluators)}
    sources = []
    for kind in order:
        spec = next(specs[kind])
        if kind == "metric":
            source = stack.enter_context(registry.from_spec(spec))
        else:
            source = stack.enter_context(EvaluatorProcess(spec, timeout=timeout))
        sources.append((spec, source))
    return sources


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="evalproto")
def main() -> None:
    """Score corpora with pluggable metric evaluators, in process or over the
    SCORE/EVAL protocol."""


@main.command("corpus-score", cls=_OrderedMetricsCommand, context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="REF... HYP")
@click.option("-i", "--input", "inputs", multiple=True, metavar="HYP",
              help="A system's hypothesis file; repeat for several systems. "
                   "With -i, every positional file is a reference.")
@click.option("-m", "--metric", "metrics", multiple=True, metavar="SPEC",
              help='A built-in evaluator, run in process, e.g. "bleu --tokenize intl". '
                   "Repeatable; the default is bleu.")
@click.option("-e", "--evaluator", "evaluators", multiple=True, metavar="CMD",
              help='An external evaluator command spoken to over the protocol, e.g. '
                   '"bleu-evaluator --lowercase". Repeatable.')
@click.option("-f", "--format", "output_format", type=click.Choice(FORMATS), default="text",
              show_default=True, help="Output: a table, JSON Lines, or TSV.")
@click.option("-w", "--width", type=click.IntRange(min=0), default=1, show_default=True,
              help="Decimals of the scores in the text table.")
@click.option("-o", "--output", default="-", show_default=True, metavar="FILE",
              help="Where to write the results; the file is replaced only when complete.")
@click.option("--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT,
              show_default=True, help="Seconds to wait for each reply of an external "
                                      "evaluator; 0 waits for ever.")
@click.pass_context
def corpus_score(ctx: click.Context, files: Tuple[str, ...], inputs: Tuple[str, ...],
                 metrics: Tuple[str, ...], evaluators: Tuple[str, ...], output_format: str,
                 width: int, output: str, timeout: float) -> None:
    """Score hypothesis files against reference files, one segment per line.

    Reference files come first, then the hypothesis file; '-' reads standard input
    and files ending in .gz are decompressed.
    """
    if inputs:
        ref_paths, hyp_paths = list(files), list(inputs)
    elif len(files) < 2:
        raise click.UsageError("give at least one reference file and a hypothesis file "
                               "(or the hypotheses with -i)")
    else:
        ref_paths, hyp_paths = list(files[:-1]), [files[-1]]
    order = ctx.meta["metric_order"]
    if not order:
        order, metrics = ["metric"], ("bleu",)
    try:
        corpus = read_corpus(ref_paths, hyp_paths)
        with ExitStack() as stack:
            sources = open_sources(stack, order, metrics, evaluators, timeout or None)
            results = score_corpus(corpus, sources)
        write_output(output, format_results(results, output_format, width))
    except EvalprotoError as exc:
        raise click.ClickException(str(exc)) from None


def write_output(path: str, text: str) -> None:
    """Results go out only once complete: to stdout, or atomically to a file."""
    if path == "-":
        click.echo(text, nl=False)
    else:
        write_atomically(path, text)


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
        stats = " ".join(evaluator_class.from_args([]).stat_names)
    except (click.UsageError, EvalprotoError):
        stats = "(depend on the options)"
    lines.append(f"  stats: {stats}")
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
