"""Finding evaluators by name through the `evalproto.evaluators` entry-point group.

Built-in evaluators register the same way third-party plugins do, so an installed
plugin is usable as `-m NAME` with no change to evalproto; the built-ins are also
listed here, to be loaded without reading every installed package's metadata.
"""

from __future__ import annotations

import functools
import importlib
import shlex
from typing import Any, Dict, Optional, Sequence, Tuple

import click
from click.core import ParameterSource

from evalproto.base.errors import SetupError, SpecError
from evalproto.metrics.evaluator import Evaluator

GROUP = "evalproto.evaluators"


BUILT_IN = {
    "bleu": "evalproto.evaluators.bleu:BLEU",
    "chrf": "evalproto.evaluators.chrf:CHRF",
    "ter": "evalproto.evaluators.ter:TER",
    "wer": "evalproto.evaluators.wer:WER",
    "cer": "evalproto.evaluators.wer:CER",
    "exact-match": "evalproto.evaluators.exact_match:ExactMatch",
    "squad": "evalproto.evaluators.squad:SQuAD",
    "f1": "evalproto.evaluators.f1:MacroF1",
    "combine": "evalproto.evaluators.combine:Combine",
    "mean": "evalproto.evaluators.mean:Mean",
}
"""The evaluators evalproto ships, as setup.cfg registers them (tests/test_sdk.py keeps
the two equal). `-m bleu` imports its module directly: importing importlib.metadata
and reading every installed distribution's entry points takes longer than scoring a
small corpus. A plugin cannot take a built-in's name."""


@functools.lru_cache(maxsize=1)
def available() -> Dict[str, Any]:
    """Every registered evaluator's entry point, by name (read once per process)."""
    from importlib.metadata import entry_points  # slow to import: see BUILT_IN
    return {entry.name: entry for entry in entry_points(group=GROUP)}


def load(name: str) -> type[Evaluator]:
    """The evaluator class registered as `name`."""
    if name in BUILT_IN:
        module, _, attribute = BUILT_IN[name].partition(":")
        return getattr(importlib.import_module(module), attribute)
    registered = available()
    if name not in registered:
        known = ", ".join(sorted(registered)) or "none (is evalproto installed?)"
        raise SpecError(f"unknown evaluator {name!r}; registered evaluators: {known}")
    return registered[name].load()


def spec_words(spec: str) -> Tuple[str, list]:
    """A spec's evaluator name and option words: "bleu --tokenize intl" gives ("bleu",
    ["--tokenize", "intl"])."""
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise SpecError(f"cannot parse evaluator spec {spec!r}: {exc}") from None
    if not words:
        raise SpecError("an evaluator spec needs a name, e.g. 'bleu --tokenize intl'")
    return words[0], words[1:]


def from_spec(spec: str) -> Evaluator:
    """Build an evaluator from a spec such as "bleu --tokenize intl"."""
    name, args = spec_words(spec)
    evaluator_class = load(name)
    try:
        return evaluator_class.from_args(args)
    except click.UsageError as exc:
        raise SpecError(f"in evaluator spec {spec!r}: {exc.format_message()}") from None


def with_options(spec: str, options: Sequence[Tuple[str, Optional[str], str]]) -> str:
    """The spec with more options, each (the evaluator's option, its value or None for a
    flag, how the caller was told it, e.g. "-tok zh"), appended unless the spec already
    says the same. An option that the spec itself sets to something else is a SpecError
    naming both: neither may silently win."""
    name, args = spec_words(spec)
    evaluator_class = load(name)
    command = click.Command(name, params=list(evaluator_class.options))
    try:
        context = command.make_context(name, list(args))
    except click.UsageError as exc:
        raise SpecError(f"in evaluator spec {spec!r}: {exc.format_message()}") from None
    params = {opt: param for param in evaluator_class.options for opt in param.opts}
    added = []
    for option, value, said in options:
        param = params[option]
        wanted: Any = True if value is None else _converted(param, context, value, said)
        if context.get_parameter_source(param.name) == ParameterSource.COMMANDLINE:
            if context.params[param.name] != wanted:
                flag = isinstance(param, click.Option) and param.is_flag
                shown = "" if flag else f" {context.params[param.name]}"
                raise SpecError(f"{said} contradicts the spec {spec!r}, which sets "
                                f"{option}{shown} itself: give the option once")
            continue
        added += [option] if value is None else [option, shlex.quote(value)]
    return " ".join([spec.strip(), *added]) if added else spec


def _converted(param: click.Parameter, context: click.Context, value: str, said: str) -> Any:
    try:
        return param.type_cast_value(context, value)
    except click.BadParameter as exc:
        raise SpecError(f"{said}: {exc.format_message()}") from None


def describe(name: str) -> str:
    """A registered evaluator as `evalproto list` shows it: name, direction, description,
    stats and options. A plugin that cannot be loaded says so, without hiding others."""
    entry = available()[name]
    try:
        evaluator_class = entry.load()
    except Exception as exc:  # a broken plugin must not hide the others
        return f"{name}: cannot be loaded from {entry.value}: {exc}\n"
    direction = "higher is better" if evaluator_class.higher_is_better else "lower is better"
    lines = [f"{name} ({direction}): {evaluator_class.describe()}"]
    try:
        stat_names = " ".join(evaluator_class.from_args([]).stat_names)
    except (click.UsageError, SetupError):
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
