"""Stats files: one metric's per-segment rows for one system, for map-then-reduce.

The format is tab-separated text, so that any tool can read it:

    #evalproto-stats {"format": 1, "metric": "bleu", "kind": "metric", ...}
    id	hyp_len	ref_len	correct_1	...
    1	31	30	25	...

The first line is `#evalproto-stats ` and one JSON object: the metric spec and whether
it runs in process (`kind` "metric") or as a command (`kind` "evaluator"), its name,
signature, stat names and direction, the number of references, the system's name, the
number of segments and the first and last segment ids. The second line names the
columns; then each line is a segment id and its statistics, written losslessly.
(pandas: `read_csv(path, sep="\\t", skiprows=1)`.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence

import numpy as np

from evalproto.errors import InputError
from evalproto.outputs import write_atomically
from evalproto.protocol import RequestError, format_rows, parse_numbers
from evalproto.readers import read_lines

MAGIC = "#evalproto-stats "
FORMAT_VERSION = 1


@dataclass
class StatsFile:
    header: Dict[str, Any]
    ids: List[str]
    rows: np.ndarray

    @property
    def system(self) -> str:
        return self.header["system"]


def write_stats(path: str, header: Dict[str, Any], ids: Sequence[str], rows: np.ndarray) -> None:
    """Write a stats file atomically: a run that stops half-way leaves no file."""
    header = {"format": FORMAT_VERSION, **header, "segments": len(ids),
              "ids": [ids[0], ids[-1]] if len(ids) else []}
    lines = [MAGIC + json.dumps(header, ensure_ascii=False),
             "\t".join(["id", *header["stat_names"]])]
    lines += [f"{segment}\t{numbers}" for segment, numbers in zip(ids, format_rows(rows, "\t"))]
    write_atomically(path, "\n".join(lines) + "\n")


def read_stats(path: str) -> StatsFile:
    lines = read_lines(path)
    if not lines or not lines[0].startswith(MAGIC):
        raise InputError(f"{path}: line 1: not an evalproto stats file "
                         f"(expected it to start with {MAGIC.strip()!r})")
    try:
        header = json.loads(lines[0][len(MAGIC):])
    except ValueError as exc:
        raise InputError(f"{path}: line 1: the header is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise InputError(f"{path}: line 1: unsupported stats file format "
                         f"{header.get('format') if isinstance(header, dict) else header!r}")
    columns = ["id", *header["stat_names"]]
    if len(lines) < 2 or lines[1].split("\t") != columns:
        raise InputError(f"{path}: line 2: expected the column names {' '.join(columns)}")
    ids, rows = [], []
    for number, line in enumerate(lines[2:], 3):
        segment, _, numbers = line.partition("\t")
        try:
            row = parse_numbers(numbers.replace("\t", " "))
        except RequestError as exc:
            raise InputError(f"{path}: line {number}: {exc}") from None
        if len(row) != len(header["stat_names"]):
            raise InputError(f"{path}: line {number}: expected {len(header['stat_names'])} "
                             f"numbers after the id, got {len(row)}")
        ids.append(segment)
        rows.append(row)
    if len(ids) != header.get("segments"):
        raise InputError(f"{path}: has {len(ids)} segments but its header says "
                         f"{header.get('segments')}; the file is incomplete")
    header["path"] = path
    return StatsFile(header, ids, np.array(rows, dtype=np.float64).reshape(
        len(rows), len(header["stat_names"])))


_MUST_AGREE = ("metric", "kind", "signature", "stat_names", "nrefs")


@dataclass
class MergedStats:
    header: Dict[str, Any]
    ids: List[str]
    systems: Dict[str, np.ndarray]


def merge_stats(files: Sequence[StatsFile]) -> MergedStats:
    """Join shards system by system, refusing anything that would not add up."""
    first = files[0]
    for other in files[1:]:
        for key in _MUST_AGREE:
            if other.header.get(key) != first.header.get(key):
                raise InputError(
                    f"stats files disagree on {key}: {first.header.get('path')} has "
                    f"{first.header.get(key)!r} but {other.header.get('path')} has "
                    f"{other.header.get(key)!r}; only shards of one metric with one "
                    f"signature can be reduced together")
    shards: Dict[str, List[StatsFile]] = {}
    for stats_file in files:
        shards.setdefault(stats_file.system, []).append(stats_file)
    ids: Dict[str, List[str]] = {}
    for system, parts in shards.items():
        ids[system] = [segment for part in parts for segment in part.ids]
        seen = set()
        for segment in ids[system]:
            if segment in seen:
                raise InputError(f"segment id {segment!r} of system {system!r} appears in more "
                                 f"than one shard; give shards distinct --first-id values")
            seen.add(segment)
    baseline = next(iter(shards))
    for system in shards:
        if ids[system] != ids[baseline]:
            raise InputError(f"systems {baseline!r} and {system!r} cover different segments "
                             f"({len(ids[baseline])} and {len(ids[system])} ids, or in another "
                             f"order); reduce them separately or give every system all shards")
    return MergedStats(first.header, ids[baseline],
                       {system: np.concatenate([part.rows for part in parts])
                        for system, parts in shards.items()})
