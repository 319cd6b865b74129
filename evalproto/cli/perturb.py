"""`evalproto perturb`: a Dynabench dataset's perturbed copies, for its fairness or
robustness (evalproto.perturb_dataset; AugLy is the perturb extra)."""

from __future__ import annotations

from typing import List, Optional

import click

import evalproto
from evalproto.api import commandline as api
from evalproto.cli.options import CONTEXT, WholeNumbers, reports_errors, writes
from evalproto.cli.progress import TerminalProgress


def _fields(ctx: click.Context, param: click.Parameter, value: Optional[str]
            ) -> Optional[List[str]]:
    """--fields context,hypothesis as a list (perturb_dataset checks the names)."""
    return None if value is None else [field.strip() for field in value.split(",")]


@click.command("perturb", context_settings=CONTEXT)
@click.argument("dataset", metavar="DATASET")
@click.option("--kind", required=True, type=click.Choice(list(evalproto.PERTURBATIONS)),
              help="fairness: gendered names and words swapped; robustness: typos, case, "
                   "contractions, inserted characters, look-alike letters...")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The JSON Lines file of the copies to write (atomically); '-' for "
                   "standard output.")
@click.option("--seed", type=WholeNumbers(min=0), default=0, show_default=True,
              help="Seed of the transforms' random choices: the same seed gives the same "
                   "file.")
@click.option("--fields", callback=_fields, metavar="FIELD,...",
              help="The fields to perturb (default: every string field but the id, "
                   "'answer' and 'input_id').")
@reports_errors
@writes(["output"], reads=["dataset"])
def command(dataset: str, kind: str, output: str, seed: int,
            fields: Optional[List[str]]) -> None:
    """Write the perturbed copies of a Dynabench dataset's examples (JSON Lines of
    {"uid" or "id", text fields, "answer", "tags"}; '-' reads standard input), as
    Dynabench makes them with AugLy to measure fairness and robustness: one copy per
    transform of each example it changes, with the original's answer and tags,
    "input_id" the original's id and the id "<id>_<transform>"."""
    rows = evalproto.perturb_dataset(dataset, kind, seed=seed, fields=fields,
                                     progress=TerminalProgress())
    api.write_output(output, api.json_lines(rows))
