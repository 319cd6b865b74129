"""Finding evaluators by name through the `evalproto.evaluators` entry-point group.

Built-in evaluators register the same way third-party plugins do, so an installed
plugin is usable as `-m NAME` with no change to evalproto.
"""

from __future__ import annotations

import shlex
from importlib.metadata import EntryPoint, entry_points

import click

from evalproto.base.errors import SetupError
from evalproto.metrics.evaluator import Evaluator

GROUP = "evalproto.evaluators"


def available() -> dict[str, EntryPoint]:
    """Every registered evaluator, by name."""
    return {entry.name: entry for entry in entry_points(group=GROUP)}


def load(name: str) -> type[Evaluator]:
    registered = available()
    if name not in registered:
        known = ", ".join(sorted(registered)) or "none (is evalproto installed?)"
        raise SetupError(f"unknown evaluator {name!r}; registered evaluators: {known}")
    return registered[name].load()


def from_spec(spec: str) -> Evaluator:
    """Build an evaluator from a spec such as "bleu --tokenize intl"."""
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise SetupError(f"cannot parse evaluator spec {spec!r}: {exc}") from None
    if not words:
        raise SetupError("an evaluator spec needs a name, e.g. 'bleu --tokenize intl'")
    name, *args = words
    evaluator_class = load(name)
    try:
        return evaluator_class.from_args(args)
    except click.UsageError as exc:
        raise SetupError(f"in evaluator spec {spec!r}: {exc.format_message()}") from None


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
