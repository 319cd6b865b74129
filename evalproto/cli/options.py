"""The options that several commands share, declared once, with the checks that turn a
bad value into a usage error (exit 2) before any work starts."""

from __future__ import annotations

import math
import os
import re
import shlex
from functools import wraps
from typing import Any, Callable, List, Optional, Sequence, Tuple

import click

import evalproto
from evalproto.api import commandline as api
from evalproto.cli.metric_flags import SACREBLEU_FLAGS, given_options, options_for
from evalproto.cli.words import (
    GREEDY_FLAGS,
    METRIC_FLAGS,
    UsageMistake,
    option_values,
    spread_values,
)

CONTEXT = {"help_option_names": ["-h", "--help"]}


class MetricsCommand(click.Command):
    """A command whose -m and -e keep their command-line order (click collects each
    repeated option apart), and whose -i and -m take several values, as sacrebleu's
    do: `-i A B -m bleu chrf`. Every word after -m up to the next option is a metric,
    so a file there is a usage error that says where files go."""

    greedy = GREEDY_FLAGS
    """The options that take every word after them."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        takes_value = {name for param in self.params if isinstance(param, click.Option)
                       and not param.is_flag and not param.count for name in param.opts}
        try:
            args = spread_values(args, takes_value, self.greedy)
        except UsageMistake as exc:
            raise click.UsageError(str(exc), ctx) from None
        found = option_values(args, METRIC_FLAGS)
        for kind, value in found:
            name = value.split()[0] if value.split() else ""
            if kind == "in-process" and os.path.exists(value) and not _is_metric(name):
                raise click.UsageError(
                    f"{value!r} comes after -m, where metrics go, but it is a file: give "
                    f"the files before -m (REF... HYP -m bleu chrf, or REF... -i HYP... "
                    f"-m bleu chrf), or end the metrics with --", ctx)
        ctx.meta["metric_order"] = [kind for kind, _ in found]
        return super().parse_args(ctx, args)


def _is_metric(word: str) -> bool:
    """Whether a word names a registered evaluator. Asked last in each check: reading
    the registered plugins is slow (see registry.BUILT_IN)."""
    return word in evalproto.registered_evaluators()


def check_paths(paths: Sequence[str]) -> None:
    """A file name that is no file but a metric's name is a usage error that points to
    -m: `corpus-score REF HYP chrf` never reads a file named chrf that is not there."""
    for path in paths:
        if not os.path.exists(path) and _is_metric(path):
            raise click.UsageError(f"{path!r} is not a file but the name of a metric: name "
                                   f"metrics with -m (-m bleu {path})")


def metric_specs(ctx: click.Context, metrics: Sequence[str],
                 evaluators: Sequence[str]) -> List[Any]:
    """The -m and -e metrics in command-line order (`bleu` if none was named), with
    sacrebleu's metric options (-tok, -lc, -cw, ...) applied to the -m metrics they
    belong to, checked before any work starts: an unknown metric or option, an -e
    that names a metric rather than a command, a sacrebleu option that contradicts a
    spec's own or belongs to none of the metrics are usage errors (exit 2)."""
    values = {"in-process": iter(metrics), "command": iter(evaluators)}
    specs = [evalproto.MetricSpec(kind, next(values[kind])) for kind in ctx.meta["metric_order"]]
    specs = specs or [evalproto.MetricSpec("in-process", "bleu")]
    for spec in specs:
        if not spec.in_process:
            check_command(spec.spec)
    flags = ctx.meta.get("sacrebleu_flags", {})
    try:
        names = [api.evaluator_name(spec.spec) if spec.in_process else ""
                 for spec in specs]
        for flag, _ in given_options(flags):
            if flag.metric not in names:
                raise click.UsageError(
                    f"{flag.short} is an option of {flag.metric} (as in sacrebleu), and no "
                    f"-m {flag.metric} is among the metrics: add -m {flag.metric}, or "
                    f"leave {flag.short} out")
        return [evalproto.MetricSpec("in-process", api.with_options(
            spec.spec, options_for(name, flags))) if spec.in_process else spec
            for spec, name in zip(specs, names)]
    except evalproto.UsageProblem as exc:
        raise click.UsageError(str(exc)) from None


def check_command(command: str) -> None:
    """An -e command that is no program but a built-in metric's name (`-e bleu`) is a
    usage error that points to -m."""
    import shutil  # here: a run without -e needs none of it (nor bz2 and lzma, which it loads)

    try:
        program = shlex.split(command)[:1]
    except ValueError:
        return  # the run reports what is wrong with it
    if program and shutil.which(program[0]) is None and _is_metric(program[0]):
        name = program[0]
        raise click.UsageError(f"-e runs a command, and there is no command {name!r}: "
                               f"{name} is a built-in metric, which -m {name} runs in process "
                               f"(or -e {name}-evaluator over the protocol)")


def _remember_flag(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    ctx.meta.setdefault("sacrebleu_flags", {})[param.name] = value


def sacrebleu_flag_options(command: Callable) -> Callable:
    """sacrebleu's metric options (-tok, -s, -sv, -lc, --force, -cc, -cw, --chrf-*,
    --ter-*), each setting its evaluator's option in every -m of that metric; see
    `metric_specs`."""
    return apply([click.option(
        *flag.flags, flag.dest, is_flag=flag.is_flag,
        metavar=None if flag.is_flag else flag.option.lstrip("-").upper(),
        expose_value=False, callback=_remember_flag,
        help=f"sacrebleu's {flag.short}: {flag.metric}'s {flag.option}, for every "
             f"-m {flag.metric}.") for flag in SACREBLEU_FLAGS], command)


def reports_errors(command: Callable) -> Callable:
    """evalproto's errors as one `Error:` line (exit 1), or a usage error (exit 2) for
    what the inputs make impossible to ask, worded for the command line."""
    @wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except evalproto.UsageProblem as exc:
            raise click.UsageError(for_the_command_line(str(exc))) from None
        except evalproto.EvalprotoError as exc:
            raise click.ClickException(for_the_command_line(str(exc))) from None
    return run


def for_the_command_line(message: str) -> str:
    """A message of the API, which names its parameters `so`, with each parameter of
    the running command named by its option instead (`data_format`: --data-format)."""
    context = click.get_current_context(silent=True)
    options = {param.name: max(param.opts, key=len) for param in
               (context.command.params if context else []) if isinstance(param, click.Option)}
    return re.sub(r"`(\w+)`", lambda found: options.get(found[1], found[0]), message)


def writes(outputs: Sequence[str], reads: Sequence[str]) -> Callable[[Callable], Callable]:
    """Refuse, before any work, an output (the parameters named in `outputs`) that is one
    of the files the command reads (the parameters named in `reads`): `-o hyp` would
    replace the hypotheses with their scores. Goes below @reports_errors."""
    def decorate(command: Callable) -> Callable:
        @wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            read = [path for name in reads for word in _words(kwargs.get(name))
                    for path in (word, word.partition("=")[2]) if path]
            api.check_outputs([kwargs.get(name) for name in outputs], read)
            return command(*args, **kwargs)
        return run
    return decorate


def _words(value: Any) -> List[str]:
    """A parameter's paths: none, one, or several."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


class WholeNumbers(click.IntRange):
    """click.IntRange that reads ASCII digits only, as evalproto reads every number:
    int() alone takes "١٠" (Arabic-Indic digits) and "1_000" too."""

    def convert(self, value: Any, param: Optional[click.Parameter],
                ctx: Optional[click.Context]) -> Any:
        if isinstance(value, str) and not api.is_whole_number(value.strip().lstrip("+-")):
            self.fail(f"{value!r} is not a valid {self.name}.", param, ctx)
        return super().convert(value, param, ctx)


class Decimals(click.FloatRange):
    """click.FloatRange that reads ASCII decimals only (see WholeNumbers): float() alone
    takes "١٠", "1_0", "nan" and "infinity"."""

    def convert(self, value: Any, param: Optional[click.Parameter],
                ctx: Optional[click.Context]) -> Any:
        if isinstance(value, str):
            try:
                api.parse_number(value.strip())
            except ValueError:
                self.fail(f"{value!r} is not a valid {self.name}.", param, ctx)
        return super().convert(value, param, ctx)


def apply(options: Sequence[Callable], command: Callable) -> Callable:
    for option in reversed(options):
        command = option(command)
    return command


def _seed(ctx: click.Context, param: click.Parameter, value: str) -> Optional[int]:
    if value.lower() == "none":
        return None
    if not api.is_whole_number(value):
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
        alpha, beta = (api.parse_number(part.strip()) for part in value.split(","))
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

score_only_option = click.option(
    "-b", "--score-only", is_flag=True,
    help="Print only the scores, one per line, in the order of the JSON rows (sacrebleu's "
         "-b); with -sl, each segment's.")

timeout_option = click.option(
    "--timeout", type=Decimals(min=0), default=120.0, show_default=True,
    callback=_seconds,
    help="Seconds to wait for each reply of an external evaluator; 0 waits for ever.")


def metric_options_with_default(default: str) -> Callable[[Callable], Callable]:
    """-m (whose default, in words, is `default`), -e, --timeout and -j."""
    return lambda command: apply([
        click.option("-m", "--metric", "metrics", multiple=True, metavar="SPEC...",
                     help=f'Built-in evaluators, run in process, as in sacrebleu: -m bleu '
                          f'chrf ter, or -m bleu -m chrf; a spec with options is quoted, '
                          f'e.g. "bleu --tokenize intl". The default is {default}.'),
        click.option("-e", "--evaluator", "evaluators", multiple=True, metavar="CMD",
                     help='An external evaluator command spoken to over the protocol, e.g. '
                          '"bleu-evaluator --lowercase". Repeatable.'),
        timeout_option,
        click.option("-j", "--jobs", type=WholeNumbers(min=1), default=1, show_default=True,
                     help="Copies of each metric to run in parallel (worker processes, or "
                          "evaluator subprocesses); the results are those of one."),
    ], command)


metric_options = metric_options_with_default("bleu")


paired_ttest_option = click.option(
    "--paired-ttest", is_flag=True,
    help="Paired t-test of segment scores (scipy's ttest_rel, as comet-compare), for "
         "metrics whose corpus score is the mean of their segment scores (imported "
         "scores, exact-match, squad); refused for BLEU, chrF and TER.")


def analysis_options(command: Callable) -> Callable:
    """The options of every command that reports scores: tests, groups, output."""
    return apply([
        click.option("-ci", "--confidence", is_flag=True,
                     help="Bootstrap 95% confidence intervals for every system and metric."),
        click.option("-cin", "--confidence-n", type=WholeNumbers(min=1), default=1000,
                     show_default=True, help="Bootstrap resamples for --confidence."),
        click.option("-pbs", "--paired-bs", is_flag=True,
                     help="Paired bootstrap test of each system against the first; also "
                          "gives every system's confidence interval."),
        click.option("-pbsn", "--paired-bs-n", type=WholeNumbers(min=1), default=1000,
                     show_default=True, help="Resamples for --paired-bs."),
        click.option("-par", "--paired-ar", is_flag=True,
                     help="Paired approximate randomization test of each system against "
                          "the first."),
        click.option("-parn", "--paired-ar-n", type=WholeNumbers(min=1), default=10000,
                     show_default=True, help="Trials for --paired-ar."),
        paired_ttest_option,
        seed_option,
        click.option("--groups", "groups_path", metavar="FILE",
                     help="One line per segment of comma-separated tags; each tag is also "
                          "scored on its own segments."),
        click.option("-f", "--format", "output_format", type=click.Choice(["text", "json", "tsv"]),
                     default="text", show_default=True,
                     help="Output: a table, JSON Lines, or TSV."),
        click.option("-w", "--width", type=WholeNumbers(min=0, max=99), default=1,
                     show_default=True, help="Decimals of the scores in the text table."),
        output_option,
    ], command)


def analysis_from(systems: Optional[int], confidence: bool, confidence_n: int, paired_bs: bool,
                  paired_bs_n: int, paired_ar: bool, paired_ar_n: int,
                  seed: Optional[int], paired_ttest: bool = False) -> Any:
    """The Analysis that the analysis options ask for, checked (the number of systems,
    when it is known before reading)."""
    if paired_bs + paired_ar + paired_ttest > 1:
        raise click.UsageError("choose one of --paired-bs, --paired-ar and --paired-ttest")
    analysis = evalproto.Analysis(
        resamples=confidence_n if confidence else 0,
        paired="bs" if paired_bs else "ar" if paired_ar else "ttest" if paired_ttest else None,
        paired_n=paired_bs_n if paired_bs else paired_ar_n if paired_ar else 0, seed=seed)
    if systems is not None:
        analysis.check_systems(systems)
    return analysis


systems_option = click.option(
    "-i", "--input", "inputs", multiple=True, metavar="HYP...",
    help="The systems' hypothesis files, as in sacrebleu: -i A B C, or -i A -i B (NAME=FILE "
         "names one); the first is the baseline of paired tests. With -i, every file "
         "before it is a reference.")


names_option = click.option(
    "--names", metavar="A,B,...",
    help="The systems' names, in order, comma-separated (by default a system is named by "
         "its file, or by NAME in -i NAME=FILE).")


def named_systems(paths: Sequence[str], names: Optional[str]
                  ) -> Tuple[List[str], Optional[List[str]]]:
    """The systems' files and names: the --names list, or NAME=FILE where FILE exists
    and the whole word is not itself a file (both existing is ambiguous: an error). No
    names (None) when every system is a plain file."""
    if names is not None:
        given = [name.strip() for name in names.split(",")]
        if len(given) != len(paths):
            raise click.UsageError(f"--names gives {len(given)} names for {len(paths)} "
                                   f"systems")
        files, named = list(paths), given
    else:
        files, named = [], []
        for path in paths:
            name, equals, file = path.partition("=")
            split = bool(equals and name and file) and (file == "-" or os.path.exists(file))
            if split and os.path.exists(path):
                raise click.UsageError(
                    f"{path!r} is ambiguous: it is a file, and it is also NAME=FILE for the "
                    f"file {file!r}; name the systems with --names instead")
            files.append(file if split else path)
            named.append(name if split else path)
        if files == named:
            return files, None
    if any(not name for name in named):
        raise click.UsageError("a system's name cannot be empty")
    repeated = sorted({name for name in named if named.count(name) > 1})
    if repeated:
        raise click.UsageError(f"two systems are named {repeated[0]!r}; names must differ")
    return files, named
