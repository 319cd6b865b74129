"""Writing stats files (the format is described in evalproto.readers.statsfiles)."""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.outputs import write_output
from evalproto.readers.statsfiles import FORMAT_VERSION, MAGIC, MetricColumns, column_names
from evalproto.wire.protocol import format_rows


def format_stats(system: str, nrefs: Any, metrics: Sequence[MetricColumns],
                 ids: Sequence[str], rows: Sequence[np.ndarray]) -> str:
    """The text of a stats file."""
    header = {"format": FORMAT_VERSION, "system": system, "nrefs": nrefs,
              "segments": len(ids), "ids": [ids[0], ids[-1]] if len(ids) else [],
              "metrics": [metric.header() for metric in metrics]}
    lines = [MAGIC + json.dumps(header, ensure_ascii=False),
             "\t".join(["id", *column_names(metrics)])]
    joined = np.hstack(rows) if rows else np.zeros((len(ids), 0))
    lines += [f"{segment}\t{numbers}" for segment, numbers in zip(ids, format_rows(joined, "\t"))]
    return "\n".join(lines) + "\n"


def write_stats(path: str, system: str, nrefs: Any, metrics: Sequence[MetricColumns],
                ids: Sequence[str], rows: Sequence[np.ndarray]) -> None:
    """Write a stats file (atomically; `-` is stdout): a failed run leaves no file."""
    check_ids(ids)
    write_output(path, format_stats(system, nrefs, metrics, ids, rows))


def check_ids(ids: Sequence[str]) -> None:
    """Refuse a segment id that would break the file's lines or columns."""
    for segment in ids:
        if "\t" in segment or "\n" in segment:
            raise InputError(f"segment id {segment!r} holds a tab or a line break")
