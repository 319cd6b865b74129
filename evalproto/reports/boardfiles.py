"""A dataset's leaderboard as a file to keep or to put in a paper: CSV (for a
spreadsheet or pandas), a LaTeX `tabular` and JSON.

Each is made from the evaluation service's own answers: the dataset's section of the
task's leaderboard (its entries, and its models with their submissions' times and what
their teams say of them) and the dataset's Dynaboard where it has one. So every figure
is the board's: CSV and JSON carry each number whole
(CSV as Python's repr, which reads back to the same float), LaTeX rounds it as the
board's page does and sets the best of each column in bold, as papers do.

A row per model in the board's order (the perf metric's ranking): its rank range, the
model, its team, each metric's score with the half width of its 95% bootstrap interval
(the board's "score ± half width": the API gives the half width, and a figure measured
once, such as throughput, has none), the Dynascore with its 95% interval, the
submission with its time (UTC), and in CSV and JSON the model's description and link
(a team's own words: a paper's table has no room for them).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from evalproto.base.errors import EvalprotoError
from evalproto.base.numerals import to_json
from evalproto.reports.latex import latex_escape, latex_row
from evalproto.reports.leaderboard import DONE, board_models, metric_names, rank_text
from evalproto.reports.report import decimals, fixed

BOARD_FORMATS = ("csv", "latex", "json")
DYNASCORE = "Dynascore"
EN_DASH = "–"
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
"""How a cell that a spreadsheet would run as a formula starts (OWASP's CSV injection)."""


@dataclass
class Column:
    """A metric's column: `places` are the decimals the board's page shows it with."""

    metric: str
    name: str
    higher_is_better: bool
    places: int
    best: Optional[float]  # the best score of the column, which LaTeX sets in bold

    @property
    def arrow(self) -> str:
        """The column's direction mark."""
        return "↑" if self.higher_is_better else "↓"


@dataclass
class Row:
    """A model's row: its entries by column (None: it has none under that metric) and
    its line of the Dynaboard (None: not on it)."""

    rank: Optional[List[int]]
    model: str
    team: str
    submission: Optional[int]
    submitted: Optional[str]
    entries: List[Optional[Mapping[str, Any]]]
    dynascore: Optional[Mapping[str, Any]]
    description: Optional[str] = None
    url: Optional[str] = None


@dataclass
class BoardTable:
    """A dataset's leaderboard as its files show it."""

    task: str
    dataset: str
    round: Optional[int]
    n: int
    perf: str
    columns: List[Column]
    rows: List[Row]
    signatures: Dict[str, str]  # by metric spec
    dynaboard: Optional[Mapping[str, Any]]
    dynascore_places: int
    best_dynascore: Optional[float]


def board_table(board: Mapping[str, Any], dataset: str,
                dynaboard: Optional[Mapping[str, Any]] = None) -> BoardTable:
    """The table of `dataset` in a leaderboard (the service's JSON), with its Dynaboard.

    The Dynascore is a column only when the Dynaboard weighs something besides the
    perf metric (a perturbed copy's fairness or robustness, a measured throughput or
    memory; see `weighs_more_than_perf`): under the perf metric's weight alone a
    Dynascore is the perf score again, and a column that repeats another would only
    mislead."""
    section = next((found for found in board["datasets"] if found["dataset"] == dataset), None)
    if section is None:
        raise EvalprotoError(f"the leaderboard of {board['task']!r} has no dataset "
                             f"{dataset!r}")
    entries = section["entries"]
    names = metric_names(board["metrics"])
    columns = []
    for metric in board["metrics"]:
        scores = [entry["score"] for entry in entries
                  if entry["metric"] == metric["metric"] and entry["status"] == DONE
                  and _finite(entry["score"])]
        higher = bool(metric["higher_is_better"])
        columns.append(Column(metric["metric"], names[metric["metric"]], higher,
                              metric.get("decimals") or decimals(scores, 1),
                              _best(scores, higher)))
    perf = board["perf"]
    if dynaboard is not None and not weighs_more_than_perf(dynaboard):
        dynaboard = None
    lines = {line["model"]: line for line in (dynaboard or {}).get("models", [])}
    cells = {(entry["model"], entry["metric"]): entry for entry in entries}
    rows = [Row(found.rank, found.model, found.first["team"], found.first["submission"],
                found.about.get("submitted"),
                [cells.get((found.model, column.metric)) for column in columns],
                lines.get(found.model), found.about.get("description"),
                found.about.get("url"))
            for found in board_models(section, perf)]
    signatures = {entry["metric"]: entry["signature"] for entry in entries
                  if entry["signature"]}
    dynascores = [line["dynascore"] for line in lines.values() if _finite(line["dynascore"])]
    return BoardTable(board["task"], dataset, section["round"], section["n"], perf, columns,
                      rows, signatures, dynaboard, decimals(dynascores, 1),
                      _best(dynascores, True))


def weighs_more_than_perf(dynaboard: Mapping[str, Any]) -> bool:
    """Whether a Dynaboard (the service's JSON) weighs a metric besides the perf
    metric: if not, each Dynascore is the model's perf score again."""
    return any(metric["metric"] != dynaboard["perf"] and metric["weight"] > 0
               for metric in dynaboard["metrics"])


def _finite(value: Optional[float]) -> bool:
    return value is not None and math.isfinite(value)


def _best(values: Sequence[float], higher_is_better: bool) -> Optional[float]:
    if not values:
        return None
    return max(values) if higher_is_better else min(values)


def format_board(table: BoardTable, board_format: str) -> str:
    """The table in one of BOARD_FORMATS."""
    if board_format not in BOARD_FORMATS:
        raise EvalprotoError(f"format {board_format!r} is none of {', '.join(BOARD_FORMATS)}")
    formats = {"csv": format_board_csv, "latex": format_board_latex,
               "json": format_board_json}
    return formats[board_format](table)


# -- CSV ---------------------------------------------------------------------------------

def format_board_csv(table: BoardTable) -> str:
    """CSV (RFC 4180's quoting, "\\n" line ends): a heading row, then a row per model.
    Every text cell a spreadsheet would run as a formula is neutralised."""
    heading = ["Rank", "Model", "Team"]
    for column in table.columns:
        heading += [f"{column.name} {column.arrow}", f"{column.name} ±"]
    if table.dynaboard is not None:
        heading += [f"{DYNASCORE} ↑", f"{DYNASCORE} 95% low", f"{DYNASCORE} 95% high"]
    heading += ["Submission", "Submitted (UTC)", "Description", "URL"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([text_cell(cell) for cell in heading])
    for row in table.rows:
        cells = [rank_text(row.rank, EN_DASH) if row.rank else "", text_cell(row.model),
                 text_cell(row.team)]
        for entry in row.entries:
            if entry is None:
                cells += ["", ""]
            elif entry["score"] is None and entry["status"] != DONE:
                cells += [text_cell(entry["status"]), ""]
            else:
                cells += [_number(entry["score"]), _number(entry["half_width"])]
        if table.dynaboard is not None:
            line = row.dynascore
            low, high = line["interval"] if line is not None else (None, None)
            cells += [_number(line["dynascore"] if line is not None else None),
                      _number(low), _number(high)]
        cells += ["" if row.submission is None else str(row.submission), row.submitted or "",
                  text_cell(row.description or ""), text_cell(row.url or "")]
        writer.writerow(cells)
    return out.getvalue()


def text_cell(text: str) -> str:
    """A text as a spreadsheet's cell: one that starts as a formula would (= + - @, a
    tab, a carriage return) gets a leading apostrophe, as OWASP advises, so that a
    spreadsheet shows it rather than runs it. Names the service checked never start so,
    but a team's own words (a model's description) and old records may."""
    return f"'{text}" if text.startswith(_FORMULA) else text


def _number(value: Optional[float]) -> str:
    """A figure whole (repr reads back to the same float); none is an empty cell."""
    return "" if value is None or not math.isfinite(value) else repr(float(value))


# -- LaTeX -------------------------------------------------------------------------------

def format_board_latex(table: BoardTable) -> str:
    """A `tabular` with plain \\hline rules (no package needed): rounded as the
    board's page rounds, the best of each column in bold, every user string escaped;
    comments above it say what it is."""
    names = {column.metric: column.name for column in table.columns}
    lines = [f"% The leaderboard of {_comment(table.task)} on {_comment(table.dataset)} "
             f"({table.n} segments), ranked by {_comment(names.get(table.perf, table.perf))}: "
             f"evalproto board export",
             "% ±: half the width of the score's 95% bootstrap interval; the best of each "
             "column in bold"]
    lines += [f"% {_comment(names.get(metric, metric))}: {_comment(signature)}"
              for metric, signature in table.signatures.items()]
    if table.dynaboard is not None:
        weights = ", ".join(f"{_comment(metric['metric'])} {metric['weight']:g}"
                            for metric in table.dynaboard["metrics"])
        lines.append(f"% {DYNASCORE}: Dynabench's, weights {weights}; (low--high): its 95% "
                     f"bootstrap interval")
    shown = len(table.columns) + (table.dynaboard is not None)
    lines += [r"\begin{tabular}{lll" + "r" * shown + "l}", r"\hline",
              latex_row(["Rank", "Model", "Team",
                          *(f"{latex_escape(column.name)} "
                            f"$\\{'uparrow' if column.higher_is_better else 'downarrow'}$"
                            for column in table.columns),
                          *([rf"{DYNASCORE} $\uparrow$"] if table.dynaboard is not None else []),
                          "Submitted"]),
              r"\hline"]
    for row in table.rows:
        cells = [rank_text(row.rank, "--") if row.rank else "", latex_escape(row.model),
                 latex_escape(row.team)]
        cells += [_latex_figure(entry, column) for entry, column in zip(row.entries,
                                                                        table.columns)]
        if table.dynaboard is not None:
            cells.append(_latex_dynascore(row.dynascore, table))
        cells.append(row.submitted[:10] if row.submitted else "")
        lines.append(latex_row(cells))
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    """Text for a LaTeX comment, as written but on one line (a line break would end
    the comment and start LaTeX source)."""
    return " ".join(text.split())


def _bold_if(text: str, value: Optional[float], best: Optional[float]) -> str:
    return rf"\textbf{{{text}}}" if best is not None and value == best else text


def _latex_figure(entry: Optional[Mapping[str, Any]], column: Column) -> str:
    """A model's score under a column, in bold if it is the column's best, with the
    half width of its interval; or the state of its job."""
    if entry is None:
        return "--"
    if entry["score"] is None and entry["status"] != DONE:
        return latex_escape(entry["status"])
    score = entry["score"] if entry["status"] == DONE else None
    text = _bold_if(fixed(entry["score"], column.places, "--"), score, column.best)
    if entry["half_width"] is None:
        return text
    return rf"{text} $\pm$ {fixed(entry['half_width'], column.places, '--')}"


def _latex_dynascore(line: Optional[Mapping[str, Any]], table: BoardTable) -> str:
    if line is None:
        return "--"
    places = table.dynascore_places
    low, high = line["interval"]
    text = _bold_if(fixed(line["dynascore"], places, "--"), line["dynascore"],
                    table.best_dynascore)
    return f"{text} ({fixed(low, places, '--')}--{fixed(high, places, '--')})"


# -- JSON --------------------------------------------------------------------------------

def format_board_json(table: BoardTable) -> str:
    """One JSON object: the dataset, its metrics (with their signatures and
    directions), the Dynaboard's weights, and a record per model with every figure
    whole, as the API gives it."""
    dynaboard = table.dynaboard
    record = {
        "task": table.task, "dataset": table.dataset, "round": table.round, "n": table.n,
        "perf": table.perf,
        "metrics": [{"metric": column.metric, "name": column.name,
                     "higher_is_better": column.higher_is_better,
                     "signature": table.signatures.get(column.metric)}
                    for column in table.columns],
        "dynaboard": None if dynaboard is None else {
            "weights": {metric["metric"]: metric["weight"] for metric in dynaboard["metrics"]},
            "samples": dynaboard["samples"], "seed": dynaboard["seed"],
            "left_out": dynaboard["left_out"]},
        "models": [_json_model(row, table) for row in table.rows]}
    return to_json(record, indent=2) + "\n"


def _json_model(row: Row, table: BoardTable) -> Dict[str, Any]:
    found: Dict[str, Any] = {
        "rank": row.rank, "model": row.model, "team": row.team,
        "description": row.description, "url": row.url,
        "submission": row.submission, "submitted": row.submitted,
        "scores": {column.metric: None if entry is None else {
            key: entry[key] for key in ("status", "score", "mean", "half_width", "rank",
                                        "tags", "message")}
            for column, entry in zip(table.columns, row.entries)}}
    if table.dynaboard is not None:
        line = row.dynascore
        found["dynascore"] = line["dynascore"] if line is not None else None
        found["dynascore_interval"] = line["interval"] if line is not None else None
    return found
