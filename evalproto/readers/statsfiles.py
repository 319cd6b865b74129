"""Stats files: the per-segment rows of one system under one or more metrics, for
map-then-reduce.

The format is tab-separated text, so that any tool can read it:

    #evalproto-stats {"format": 2, "system": "mt", "nrefs": 2, "segments": 50, ...}
    id	hyp_len	ref_len	correct_1	...
    1	31	30	25	...

The first line is `#evalproto-stats ` and one JSON object: the system's name, the
number of references, the number of segments and the first and last segment ids, and
`metrics`, one entry per metric: its spec and whether it runs in process (`kind`
"in-process") or as a command (`kind` "command"), its signature, stat names and
direction. The second line names the columns: `id`, then the stat names (prefixed by the
metric's name and a dot when a file holds several metrics). Then each line is a segment
id and its statistics, written losslessly. (pandas: `read_csv(path, sep="\\t",
skiprows=1)`.)

A stats file may come from anyone, so reading it trusts nothing: the header is checked
key by key, a file is complete only if it has the segments its header announces, from
the first id to the last, and ends with a line end (a file cut short in its last line
would otherwise be read with a smaller last number). Format 1 files (one metric, its
fields at the top of the header) are still read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.numerals import is_whole_number
from evalproto.readers.text import read_bytes, split_lines
from evalproto.wire.protocol import RequestError, parse_numbers

MAGIC = "#evalproto-stats "
FORMAT_VERSION = 2
KINDS = ("in-process", "command")
FORMAT_1_KINDS = {"metric": "in-process", "evaluator": "command"}


@dataclass(frozen=True)
class MetricColumns:
    """One metric's part of a stats file: how to rebuild it, and its columns."""

    spec: str
    kind: str  # "in-process" or "command", as MetricSpec.kind
    signature: str
    stat_names: Tuple[str, ...]
    higher_is_better: bool

    def header(self) -> Dict[str, Any]:
        return {"spec": self.spec, "kind": self.kind, "signature": self.signature,
                "stat_names": list(self.stat_names), "higher_is_better": self.higher_is_better}


@dataclass
class StatsFile:
    path: str
    system: str
    nrefs: Any  # an int, or "var"
    metrics: List[MetricColumns]
    ids: List[str]
    rows: List[np.ndarray]  # per metric, (segments, its stats)
    first_line: int = 3  # the line of the first segment


def column_names(metrics: Sequence[MetricColumns]) -> List[str]:
    if len(metrics) == 1:
        return list(metrics[0].stat_names)
    labels = _labels(metrics)
    return [f"{label}.{stat}" for label, metric in zip(labels, metrics)
            for stat in metric.stat_names]


def _labels(metrics: Sequence[MetricColumns]) -> List[str]:
    """Each metric's column prefix: its evaluator's name, numbered when it repeats."""
    names = [metric.spec.split()[0].rsplit("/", 1)[-1] if metric.spec.strip() else "metric"
             for metric in metrics]
    return [name if names.count(name) == 1 else f"{name}#{names[:i + 1].count(name)}"
            for i, name in enumerate(names)]


# -- reading ----------------------------------------------------------------------------

def _field(header: Dict[str, Any], key: str, valid: Callable[[Any], bool], what: str,
           path: str) -> Any:
    """header[key], if `valid`; otherwise an error that names the key, what it must be
    and what it holds (a hand-edited header is the usual cause)."""
    value = header.get(key)
    if key not in header or not valid(value):
        found = "nothing" if key not in header else json.dumps(value)[:60]
        raise InputError(f"{path}: line 1: the header's {key!r} must be {what}, found {found}")
    return value


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _metric(entry: Any, path: str) -> MetricColumns:
    if not isinstance(entry, dict):
        raise InputError(f"{path}: line 1: each of the header's 'metrics' must be an object")
    names = _field(entry, "stat_names", lambda names: isinstance(names, list) and bool(names)
                   and all(isinstance(name, str) and name and "\t" not in name
                           for name in names),
        "a non-empty list of stat names", path)
    return MetricColumns(
        _field(entry, "spec", _is_text, "a metric spec or an evaluator command", path),
        _field(entry, "kind", lambda kind: kind in KINDS, "'in-process' or 'command'", path),
        _field(entry, "signature", _is_text, "a signature", path), tuple(names),
        _field(entry, "higher_is_better", lambda value: isinstance(value, bool),
               "true or false", path))


def _header(line: str, path: str) -> Tuple[Dict[str, Any], List[MetricColumns]]:
    if not line.startswith(MAGIC):
        raise InputError(f"{path}: line 1: not an evalproto stats file "
                         f"(expected it to start with {MAGIC.strip()!r})")
    try:
        header = json.loads(line[len(MAGIC):])
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: line 1: the header is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("format") not in (1, FORMAT_VERSION):
        found = header.get("format") if isinstance(header, dict) else header
        raise InputError(f"{path}: line 1: unsupported stats file format {found!r}")
    if header["format"] == 1:  # one metric, its fields at the top
        header = {**header, "metrics": [{**header, "spec": header.get("metric"),
                                         "kind": FORMAT_1_KINDS.get(str(header.get("kind")))}]}
    entries = _field(header, "metrics", lambda value: isinstance(value, list) and bool(value),
                     "a non-empty list of metrics", path)
    return header, [_metric(entry, path) for entry in entries]


def read_stats(path: str) -> StatsFile:
    """A stats file, checked from header to last line."""
    data = read_bytes(path)
    if not data:
        raise InputError(f"{path}: file is empty; expected an evalproto stats file")
    if not data.endswith(b"\n"):
        raise InputError(f"{path}: the file is incomplete: its last line has no line end; "
                         f"was it cut short?")
    lines = split_lines(path, data)
    header, metrics = _header(lines[0], path)
    system = _field(header, "system", _is_text, "the system's name", path)
    nrefs = _field(header, "nrefs", lambda value: _is_count(value) and value > 0 or value == "var",
                   'a number of references or "var"', path)
    segments = _field(header, "segments", _is_count, "a number of segments", path)
    bounds = _field(header, "ids", lambda value: isinstance(value, list) and len(value) in (0, 2),
                    "the first and last segment ids", path)
    columns = ["id", *column_names(metrics)]
    if len(lines) < 2 or lines[1].split("\t") != columns:
        raise InputError(f"{path}: line 2: expected the column names {' '.join(columns)}")
    ids, rows = [], []
    for number, line in enumerate(lines[2:], 3):
        segment, _, numbers = line.partition("\t")
        try:
            row = parse_numbers(numbers.replace("\t", " "))
        except RequestError as exc:
            raise InputError(f"{path}: line {number}: {exc}") from None
        if len(row) != len(columns) - 1:
            raise InputError(f"{path}: line {number}: expected {len(columns) - 1} numbers "
                             f"after the id, got {len(row)}")
        ids.append(segment)
        rows.append(row)
    if len(ids) != segments or bounds != ([ids[0], ids[-1]] if ids else []):
        raise InputError(f"{path}: {_unlike_header(segments, bounds, ids)}")
    table = np.array(rows, dtype=np.float64).reshape(len(rows), len(columns) - 1)
    bounds_of = np.cumsum([0] + [len(metric.stat_names) for metric in metrics])
    return StatsFile(path, system, nrefs, metrics, ids,
                     [table[:, start:end] for start, end in zip(bounds_of[:-1], bounds_of[1:])])


def _unlike_header(segments: int, bounds: List[str], ids: List[str]) -> str:
    """What differs between a stats file's lines and its header, in words."""
    announced = (f"its header announces {segments} segments (ids "
                 f"{' to '.join(map(str, bounds)) or 'none'})")
    held = f" (ids {ids[0]} to {ids[-1]})" if ids else ""
    if len(ids) < segments:
        return (f"the file is incomplete: {announced}, but it holds {len(ids)}{held}; was it "
                f"cut short?")
    if len(ids) > segments:
        return (f"{announced}, but it holds {len(ids)}{held}: lines were added after it was "
                f"written")
    return (f"{announced}, but its lines run from id {ids[0]} to {ids[-1]}: they are not in "
            f"the order the file was written in (were they sorted?), or their ids were "
            f"changed")


# -- merging ----------------------------------------------------------------------------

@dataclass
class MergedStats:
    """Every system's rows, per metric, joined on segment ids in id order."""

    nrefs: Any
    metrics: List[MetricColumns]
    ids: List[str]
    systems: Dict[str, List[np.ndarray]]  # per system, per metric, rows in id order


def _order(ids: Sequence[str]) -> Optional[List[int]]:
    """The ids as numbers, if every id is a whole number; None otherwise."""
    if all(is_whole_number(segment) for segment in ids):
        return [int(segment) for segment in ids]
    return None


def _ranges(numbers: Sequence[int]) -> str:
    """"3-5, 9" for [3, 4, 5, 9]: the missing ids, shown briefly."""
    spans: List[List[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    shown = [f"{a}-{b}" if a != b else str(a) for a, b in spans[:5]]
    return ", ".join(shown) + (f" and {len(spans) - 5} more ranges" if len(spans) > 5 else "")


def merge_stats(files: Sequence[StatsFile], partial: bool = False) -> MergedStats:
    """Join shards system by system on their segment ids, refusing anything that would
    not add up: other metrics or signatures, a segment twice, systems that cover other
    segments, and (unless `partial`) segments that no shard holds."""
    first = files[0]
    for other in files[1:]:
        for what, mine, theirs in (("metrics", first.metrics, other.metrics),
                                   ("nrefs", first.nrefs, other.nrefs)):
            if mine != theirs:
                raise InputError(
                    f"stats files disagree on {what}: "
                    f"{_difference(first.path, mine, other.path, theirs)}; only shards of the "
                    f"same metrics with the same signatures can be reduced together")
    by_system: Dict[str, Dict[str, str]] = {}  # system -> segment id -> its file
    for stats_file in files:
        found = by_system.setdefault(stats_file.system, {})
        for segment in stats_file.ids:
            if segment in found:
                raise InputError(
                    f"segment id {segment!r} of system {stats_file.system!r} is in "
                    f"{found[segment]} and in {stats_file.path}; give shards distinct "
                    f"`first_id` values")
            found[segment] = stats_file.path
    baseline = next(iter(by_system))
    ids = list(by_system[baseline])
    numbers = _order(ids)
    if numbers is not None:
        ids = [segment for _, segment in sorted(zip(numbers, ids))]
        present = sorted(numbers)
        start = 0 if present[0] == 0 else 1
        missing = sorted(set(range(start, present[-1] + 1)) - set(present))
        if missing and not partial:
            raise InputError(
                f"segments {_ranges(missing)} of system {baseline!r} are in no stats file "
                f"given: is a shard missing? (`partial` reduces the segments that are there)")
    for system, found in by_system.items():
        if set(found) != set(ids):
            extra = [segment for segment in found if segment not in by_system[baseline]]
            lacking = [segment for segment in ids if segment not in found]
            raise InputError(
                f"systems {baseline!r} and {system!r} cover different segments "
                f"({len(ids)} and {len(found)} ids; {system!r} "
                f"{'lacks ' + repr(lacking[0]) if lacking else 'has ' + repr(extra[0])}); "
                f"reduce them separately or give every system all shards")
    systems = {}
    for system in by_system:
        parts = [part for part in files if part.system == system]
        position = {segment: i for i, segment in enumerate(
            segment for part in parts for segment in part.ids)}
        order = np.fromiter((position[segment] for segment in ids), dtype=np.intp,
                            count=len(ids))
        systems[system] = [np.concatenate([part.rows[m] for part in parts])[order]
                           for m in range(len(first.metrics))]
    return MergedStats(first.nrefs, first.metrics, ids, systems)


def _difference(path: str, mine: Any, other_path: str, theirs: Any) -> str:
    """The first thing two stats files' headers say differently, in words."""
    if not isinstance(mine, list):
        return f"{path} has {mine!r} but {other_path} has {theirs!r}"
    if len(mine) != len(theirs):
        return (f"{path} holds {len(mine)} metrics ({', '.join(m.spec for m in mine)}) but "
                f"{other_path} holds {len(theirs)} ({', '.join(m.spec for m in theirs)})")
    for ours, their in zip(mine, theirs):
        for field in ("spec", "kind", "signature", "stat_names", "higher_is_better"):
            a, b = getattr(ours, field), getattr(their, field)
            if a != b:
                return (f"{path} has {ours.spec!r} with {field} {_shown(a)} but {other_path} "
                        f"has {their.spec!r} with {field} {_shown(b)}")
    return f"{path} and {other_path}"  # not reached: the lists differ


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return " ".join(value)
    return repr(value)
