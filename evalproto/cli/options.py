"""The options that several commands share, declared once, with the checks that turn a
bad value into a usage error (exit 2) before any work starts."""

from __future__ import annotations

import math
from functools import wraps
from typing import Any, Callable, List, Optional, Sequence, Tuple

import click

import evalproto
from evalproto.cli.words import METRIC_FLAGS, UsageMistake, option_values, spread_inputs

CONTEXT = {"help_option_names": ["-h", "--help"]}


class MetricsCommand(click.Command):
    """A command whose -m and -e keep their command-line order (click collects each
    repeated option apart), and whose -i takes several files, as sacrebleu's does."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        takes_value = {name for param in self.params if isinstance(param, click.Option)
                       and not param.is_flag and not param.count for name in param.opts}
        if "-i" in takes_value:
            try:
                args = spread_inputs(args, takes_value)
            except UsageMistake as exc:
                raise click.UsageError(str(exc), ctx) from None
        ctx.meta["metric_order"] = [kind for kind, _ in option_values(args, METRIC_FLAGS)]
        return super().parse_args(ctx, args)


def metric_specs(ctx: click.Context, metrics: Sequence[str],
                 evaluators: Sequence[str]) -> List[Any]:
    """The -m and -e metrics in command-line order; `bleu` if none was named."""
    values = {"in-process": iter(metrics), "command": iter(evaluators)}
    specs = [evalproto.MetricSpec(kind, next(values[kind])) for kind in ctx.meta["metric_order"]]
    return specs or [evalproto.MetricSpec("in-process", "bleu")]


def reports_errors(command: Callable) -> Callable:
    """evalproto's errors as one `Error:` line (exit 1), or a usage error (exit 2) for
    what the inputs make impossible to ask."""
    @wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except evalproto.UsageProblem as exc:
            raise click.UsageError(str(exc)) from None
        except evalproto.EvalprotoError as exc:
            raise click.ClickException(str(exc)) from None
    return run


def apply(options: Sequence[Callable], command: Callable) -> Callable:
    for option in reversed(options):
        command = option(command)
    return command


def _seed(ctx: click.Context, param: click.Parameter, value: str) -> Optional[int]:
    if value.lower() == "none":
        return None
    if not (value.isascii() and value.isdigit()):
        raise click.BadParameter(f"expected a whole number >= 0 or 'none', got {value!r}")
    return int(value)


def _seconds(ctx: click.Context, param: click.Parameter, value: float) -> Optional[float]:
    """Seconds, with 0 for no bound (None below)."""
    if not math.isfinite(value):
        raise click.BadParameter(f"expected a number of seconds (0 waits for ever), got {value}")
    return value or None


def _pair(ctx: click.Context, param: click.Parameter,
          value: Optional[str]) -> Optional[Tuple[float, float]]:
    if value is None:
        return None
    try:
        alpha, beta = (evalproto.parse_number(part.strip()) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected two numbers ALPHA,BETA, got {value!r}") from None
    return alpha, beta


seed_option = click.option(
    "--seed", default="12345", show_default=True, callback=_seed,
    help="Seed of the resampling; 'none' for an unseeded run.")

output_option = click.option(
    "-o", "--output", default="-", show_default=True, metavar="FILE",
    help="Where to write the results ('-': standard output); a file is replaced only "
         "when complete.")

rerank_option = click.option(
    "--rerank-params", "reranker", metavar="ALPHA,BETA", callback=_pair,
    help="Fixed reranking parameters instead of fitting them on each log.")

scheduler_option = click.option(
    "--scheduler", metavar="ADDRESS",
    help="Compute on a Dask cluster: a scheduler address such as tcp://host:8786, or "
         "local[:N] for N local worker processes (default 2). Needs evalproto[dask].")

timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0), default=120.0, show_default=True,
    callback=_seconds,
    help="Seconds to wait for each reply of an external evaluator; 0 waits for ever.")


def metric_options(command: Callable) -> Callable:
    """-m, -e, --timeout and -j."""
    return apply([
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


def analysis_options(command: Callable) -> Callable:
    """The options of every command that reports scores: tests, groups, output."""
    return apply([
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
        click.option("-f", "--format", "output_format", type=click.Choice(["text", "json", "tsv"]),
                     default="text", show_default=True,
                     help="Output: a table, JSON Lines, or TSV."),
        click.option("-w", "--width", type=click.IntRange(min=0, max=99), default=1,
                     show_default=True, help="Decimals of the scores in the text table."),
        output_option,
    ], command)


def analysis_from(systems: Optional[int], confidence: bool, confidence_n: int, paired_bs: bool,
                  paired_bs_n: int, paired_ar: bool, paired_ar_n: int,
                  seed: Optional[int]) -> Any:
    """The Analysis that the analysis options ask for, checked (the number of systems,
    when it is known before reading)."""
    if paired_bs and paired_ar:
        raise click.UsageError("choose one of --paired-bs and --paired-ar")
    if (paired_bs or paired_ar) and systems is not None and systems < 2:
        raise click.UsageError("paired tests compare systems: give two or more with -i; "
                               "the first is the baseline")
    return evalproto.Analysis(
        confidence=confidence_n if confidence else 0,
        paired="bs" if paired_bs else "ar" if paired_ar else None,
        paired_n=paired_bs_n if paired_bs else paired_ar_n if paired_ar else 0, seed=seed)


def check_scheduler(jobs: int, paths: Sequence[str]) -> None:
    """--scheduler runs on a cluster whose workers read the files themselves."""
    if jobs > 1:
        raise click.UsageError("-j runs copies on this machine, and --scheduler on the Dask "
                               "cluster's workers: choose one")
    if "-" in paths:
        raise click.UsageError("with --scheduler, the workers read the files: standard input "
                               "('-') cannot be one")
