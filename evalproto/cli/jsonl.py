"""`evalproto jsonl dataset|predictions`: Dynabench's JSON Lines files from text files,
for the evaluation service (`evalproto board`) and `corpus-score --data-format
dynabench`."""

from __future__ import annotations

from typing import Optional, Tuple

import click

from evalproto.api import commandline as api
from evalproto.cli.options import CONTEXT, reports_errors, writes

_OUTPUT = click.option("-o", "--output", required=True, metavar="FILE",
                       help="The JSON Lines file to write (atomically); '-' for standard "
                            "output.")
_IDS = click.option("--ids", "ids_path", metavar="FILE",
                    help="The examples' ids, one a line (default: s1, s2, ... by line).")


@click.group("jsonl", context_settings=CONTEXT)
def command() -> None:
    """Write Dynabench's JSON Lines files from text files (one segment a line): a
    dataset from reference files, predictions from a hypothesis file."""


@command.command("dataset", context_settings=CONTEXT)
@click.argument("refs", nargs=-1, required=True, metavar="REF...")
@click.option("--groups", "groups_path", metavar="FILE",
              help="Each example's tags: a groups file, one line of comma-separated tags "
                   "per segment (as corpus-score --groups reads it).")
@_IDS
@_OUTPUT
@reports_errors
@writes(["output"], reads=["refs", "groups_path", "ids_path"])
def dataset(refs: Tuple[str, ...], groups_path: Optional[str], ids_path: Optional[str],
            output: str) -> None:
    """A dataset, {"uid", "answer", "tags"} a line: the answer is the line of the
    reference file, or the list of the lines of several."""
    api.write_output(output, api.dataset_jsonl(list(refs), groups_path, ids_path))


@command.command("predictions", context_settings=CONTEXT)
@click.argument("hyp", metavar="HYP")
@_IDS
@_OUTPUT
@reports_errors
@writes(["output"], reads=["hyp", "ids_path"])
def predictions(hyp: str, ids_path: Optional[str], output: str) -> None:
    """A system's predictions, {"id", "pred"} a line, for a dataset of the same ids."""
    api.write_output(output, api.predictions_jsonl(hyp, ids_path))
