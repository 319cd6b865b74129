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
