"""What the pages show, as named data for the templates: a dataset's leaderboard as a
table (columns, a line per model, its cells, the clusters of the all-pairs test, tag
tables), how it is sorted, and a model's page. Made from the API's own JSON (the
boards' figures), so that a page shows exactly what the API answers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from evalproto.reports.leaderboard import board_models, metric_names, rank_text
from evalproto.reports.report import decimals, fixed
from evalproto.service.boards import RANKING
from evalproto.service.schema import DONE

DASH = "–"


class Directed:
    """A metric's direction, as a heading shows it: a mark, and in words for a screen
    reader's title."""

    higher_is_better: bool

    @property
    def direction(self) -> str:
        """The direction mark."""
        return "↑" if self.higher_is_better else "↓"

    @property
    def direction_words(self) -> str:
        """The direction in words."""
        return "higher is better" if self.higher_is_better else "lower is better"


@dataclass
class Column(Directed):
    """A metric's column: `key` names it in sorting (m0, m1, ...)."""

    key: str
    name: str
    spec: str
    higher_is_better: bool
    places: int


@dataclass
class Cell:
    """One model's figure under one metric (with its own rank range among the models),
    or the state of its job."""

    key: str
    status: str
    value: Optional[float]
    text: str
    message: Optional[str] = None
    rank: Optional[List[int]] = None
    half_width: Optional[float] = None

    @property
    def rank_text(self) -> str:
        """The cell's rank range, as the pages show it."""
        if self.rank:
            return rank_text(self.rank, DASH)
        return "ranking…" if self.status == RANKING else DASH


@dataclass
class Line:
    """One model's row: `index` is its place in the perf metric's ranking; rows of one
    cluster (models the all-pairs test does not tell apart) share `cluster`."""

    index: int
    model: str
    team: str
    submission: int
    rank: Optional[List[int]]
    cells: List[Cell]
    ranking: bool = False  # scored, its rank being computed
    cluster: Optional[int] = None
    first_of_cluster: bool = False
    submitted: str = ""  # when its current submission came (ISO 8601)
    description: Optional[str] = None
    url: Optional[str] = None

    @property
    def date(self) -> str:
        """The day its current submission came."""
        return self.submitted[:10]

    @property
    def rank_text(self) -> str:
        """The row's rank range by the perf metric, as the pages show it."""
        return rank_text(self.rank, DASH) if self.rank else "ranking…" if self.ranking else DASH

    def value(self, key: str) -> Any:
        """What the row sorts by under a column (None sorts last either way)."""
        if key == "rank":
            return self.index if self.rank else None
        if key in ("model", "team", "submitted"):
            return getattr(self, key) or None
        return next(cell.value for cell in self.cells if cell.key == key)


@dataclass
class TagScore:
    """A tag's score (the corpus score of its segments), and as shown."""

    value: Optional[float]
    text: str


@dataclass
class TagLine:
    """A row of a tag table: a model's (or, on a model's page, a tag's) scores."""

    name: str
    scores: List[TagScore]


@dataclass
class TagTable:
    """A metric's score of each tag, a line per model."""

    name: str
    tags: List[str]
    lines: List[TagLine]


@dataclass
class Sorting:
    """How a table is sorted: by `key`, `reverse`d from that column's natural order
    (best first for a metric, A to Z for names, rank order for ranks)."""

    key: str = "rank"
    reverse: bool = False

    @classmethod
    def parse(cls, value: Optional[str], keys: Sequence[str]) -> Sorting:
        """A sort from its query value; an unknown one is the default."""
        key = (value or "rank").lstrip("-")
        return cls(key, (value or "").startswith("-")) if key in keys else cls()

    def descending(self, column: Optional[Column]) -> bool:
        """Whether the column is sorted best (or Z) first."""
        natural = column is not None and column.higher_is_better
        return natural != self.reverse

    def next(self, key: str) -> str:
        """The sort a heading's button asks for: its column, or reversed if sorted."""
        return f"-{key}" if key == self.key and not self.reverse else key


@dataclass
class ChartRow:
    """A model's mark on a chart: its score (a dot) and its interval (a line), in the
    chart's units, and as shown."""

    model: str
    team: str
    y: float
    low: float
    score: float
    high: float
    text: str


@dataclass
class Chart:
    """The perf metric's scores with their 95% intervals, a row per ranked model in
    ranking order, drawn as SVG by the server (the pages load nothing else)."""

    metric: str
    rows: List[ChartRow]
    ticks: List[Tuple[float, str]]
    width: int
    height: int
    left: int  # where the plot starts (the names are left of it)

    @property
    def right(self) -> int:
        """Where the plot ends."""
        return self.width - CHART_MARGIN


CHART_WIDTH, CHART_LEFT, CHART_MARGIN, CHART_ROW, CHART_AXIS = 720, 200, 16, 22, 34


def _chart(columns: Sequence[Column], lines: Sequence[Line], perf: str) -> Optional[Chart]:
    """The chart of the perf metric's ranked scores (None if none is ranked yet)."""
    column = next(column for column in columns if column.spec == perf)
    marked = []
    for line in sorted(lines, key=lambda line: line.index):
        cell = next(cell for cell in line.cells if cell.key == column.key)
        if cell.status == DONE and cell.value is not None and cell.half_width is not None:
            marked.append((line.model, line.team, cell.value, cell.half_width, cell.text))
    if not marked:
        return None
    low = min(value - half for _, _, value, half, _ in marked)
    high = max(value + half for _, _, value, half, _ in marked)
    ticks = _ticks(low, high)
    start, end = min(low, ticks[0]), max(high, ticks[-1])
    span = (end - start) or 1.0
    right = CHART_WIDTH - CHART_MARGIN

    def x(value: float) -> float:
        """Where a value is drawn."""
        return round(CHART_LEFT + (value - start) / span * (right - CHART_LEFT), 2)

    rows = [ChartRow(model, team, CHART_ROW * (number + 0.5), x(value - half), x(value),
                     x(value + half), text)
            for number, (model, team, value, half, text) in enumerate(marked)]
    return Chart(column.name, rows, [(x(tick), fixed(tick, column.places, "")) for tick in ticks],
                 CHART_WIDTH, CHART_ROW * len(rows) + CHART_AXIS, CHART_LEFT)


def _ticks(low: float, high: float) -> List[float]:
    """Round values from about `low` to about `high`, five or so."""
    span = high - low or abs(high) or 1.0
    step = 10 ** math.floor(math.log10(span / 4))
    step *= next(factor for factor in (1, 2, 5, 10) if span / (step * factor) <= 5)
    first = math.floor(low / step) * step
    count = int(math.ceil((high - first) / step - 1e-9)) + 1
    return [round(first + number * step, 12) for number in range(count)]


@dataclass
class Section:
    """A dataset's leaderboard as its page shows it."""

    dataset: str
    round: Optional[int]
    n: int
    nrefs: Any
    columns: List[Column]
    lines: List[Line]
    tag_tables: List[TagTable]
    signatures: List[Tuple[str, str]]
    perf: str  # the key of the perf metric's column, which ranks
    sorting: Sorting = field(default_factory=Sorting)
    perturbation_of: Optional[str] = None  # a perturbed copy: the dataset it copies
    kind: Optional[str] = None  # and its kind (fairness, robustness)
    chart: Optional[Chart] = None

    @property
    def ranking(self) -> int:
        """How many figures are being ranked (scored, their intervals on the way)."""
        return sum(cell.status == RANKING for line in self.lines for cell in line.cells)

    def aria_sort(self, key: str) -> Optional[str]:
        """The aria-sort of a heading: how its column sorts the table, if it does."""
        if key != self.sorting.key:
            return None
        column = next((column for column in self.columns if column.key == key), None)
        return "descending" if self.sorting.descending(column) else "ascending"


@dataclass
class StatsLink:
    """Whether a model's stats file on a dataset can be downloaded, and which metrics
    it holds, or why there is none."""

    ready: bool
    said: str


@dataclass
class ModelDataset:
    """A model's standing on one dataset, for its page: the dataset's section of the
    board (its row alone), its row, its stats file, its scores by tag, and how many
    models the ranks are among."""

    section: Section
    line: Line
    stats: StatsLink
    tag_names: List[str]
    tag_lines: List[TagLine]
    models: int


def section(board: Mapping[str, Any], dataset: Mapping[str, Any],
            sort: Optional[str] = None, only: Optional[str] = None) -> Section:
    """A dataset's section of a leaderboard (the API's JSON), sorted as asked; with
    `only`, of that model's row alone (a model's page)."""
    metrics, perf = board["metrics"], board["perf"]
    names = metric_names(metrics)
    entries = dataset["entries"]
    cells = {(entry["model"], entry["metric"]): entry for entry in entries}
    columns = [Column(f"m{number}", names[metric["metric"]], metric["metric"],
                      bool(metric["higher_is_better"]), metric.get("decimals") or decimals(
                          [entry["score"] for entry in entries
                           if entry["metric"] == metric["metric"]
                           and entry["score"] is not None], 1))
               for number, metric in enumerate(metrics)]
    lines = [Line(index, found.model, found.first["team"], found.first["submission"],
                  found.rank, [_cell(column, cells.get((found.model, column.spec)))
                               for column in columns], found.first["status"] == RANKING,
                  submitted=found.about.get("submitted") or "",
                  description=found.about.get("description"), url=found.about.get("url"))
             for index, found in enumerate(board_models(dataset, perf))
             if only is None or found.model == only]
    _clusters(lines)
    chart = _chart(columns, lines, perf)
    sorting = Sorting.parse(sort, ["rank", "model", "team", "submitted",
                                   *(c.key for c in columns)])
    key_column = next((column for column in columns if column.key == sorting.key), None)
    present = [line for line in lines if line.value(sorting.key) is not None]
    present.sort(key=lambda line: line.value(sorting.key),
                 reverse=sorting.descending(key_column))
    ordered = present + [line for line in lines if line.value(sorting.key) is None]
    signatures = list(dict.fromkeys((names[entry["metric"]], entry["signature"])
                                    for entry in entries if entry["signature"]))
    perf_key = next(column.key for column in columns if column.spec == perf)
    return Section(dataset["dataset"], dataset["round"], dataset["n"], dataset["nrefs"],
                   columns, ordered, _tag_tables(columns, entries, only), signatures, perf_key,
                   sorting, dataset.get("perturbation_of"), dataset.get("kind"), chart)


def _cell(column: Column, entry: Optional[Mapping[str, Any]]) -> Cell:
    """A model's cell under a column: its score and interval, or its job's state."""
    if entry is None:
        return Cell(column.key, "none", None, DASH)
    places = column.places
    if entry["status"] == RANKING:  # its interval is on the way
        return Cell(column.key, RANKING, entry["score"],
                    f"{fixed(entry['score'], places, 'n/a')} ± …")
    if entry["status"] != DONE:
        return Cell(column.key, entry["status"], None, entry["status"], entry["message"])
    if entry["half_width"] is None:  # measured once (throughput, memory): no interval
        return Cell(column.key, DONE, entry["score"], fixed(entry["score"], places, "n/a"),
                    rank=entry["rank"])
    return Cell(column.key, DONE, entry["score"],
                f"{fixed(entry['score'], places, 'n/a')} ± "
                f"{fixed(entry['half_width'], places, 'n/a')}", rank=entry["rank"],
                half_width=entry["half_width"])


def _clusters(lines: Sequence[Line]) -> None:
    """Number the clusters of the ranked rows (in ranking order): a cluster is the
    models that share a rank range."""
    previous: Optional[List[int]] = None
    cluster = -1
    for line in lines:
        if line.rank is None:
            continue
        if line.rank != previous:
            cluster += 1
            line.first_of_cluster = True
        line.cluster = cluster
        previous = line.rank


def _tag_tables(columns: Sequence[Column], entries: Sequence[Mapping[str, Any]],
                only: Optional[str] = None) -> List[TagTable]:
    """Each metric's tag table (the metrics without tags have none)."""
    tables = []
    for column in columns:
        scored = [entry for entry in entries if entry["metric"] == column.spec
                  and entry["status"] == DONE and (only is None or entry["model"] == only)]
        tags = list(dict.fromkeys(tag for entry in scored for tag in entry["tags"]))
        if not tags:
            continue
        lines = [TagLine(entry["model"], [
            TagScore(entry["tags"].get(tag), fixed(entry["tags"].get(tag), column.places, "n/a"))
            for tag in tags]) for entry in scored]
        tables.append(TagTable(column.name, tags, lines))
    return tables


def model_dataset(board: Mapping[str, Any], dataset: Mapping[str, Any], model: str,
                  stats: StatsLink) -> Optional[ModelDataset]:
    """A model's standing on a dataset of the board, or None if it has no entry there."""
    shown = section(board, dataset, only=model)
    line = next(iter(shown.lines), None)
    if line is None:
        return None
    names = [table.name for table in shown.tag_tables]
    found = {table.name: dict(zip(table.tags, next((line.scores for line in table.lines
                                                     if line.name == model), [])))
             for table in shown.tag_tables}
    tags = list(dict.fromkeys(tag for table in shown.tag_tables for tag in table.tags))
    tag_lines = [TagLine(tag, [found[name].get(tag, TagScore(None, DASH)) for name in names])
                 for tag in tags]
    models = len({entry["model"] for entry in dataset["entries"]})
    return ModelDataset(shown, line, stats, names, tag_lines, models)


def stats_link(export: Dict[str, Any] | str, dataset: str, model: str) -> StatsLink:
    """A model's stats file on a dataset, from what the dataset's export holds (or why
    there is no export)."""
    if isinstance(export, str):
        return StatsLink(False, export)
    if model not in export["models"]:
        return StatsLink(False, f"{model} has no current submission on {dataset}")
    return StatsLink(True, ", ".join(export["metrics"]))
