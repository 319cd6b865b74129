"""A leaderboard's files (evalproto.reports.boardfiles) from the service's JSON, on the
cases a live board rarely shows at once: jobs queued and failed, a score being ranked,
a negative score (a number, not a formula), a lower-is-better column, a tie for the
best, a model missing from the Dynaboard, and a team's words that a spreadsheet would
run."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Dict, Optional

import pytest

from evalproto.base.errors import EvalprotoError
from evalproto.reports.boardfiles import (
    board_table,
    format_board,
    text_cell,
    weighs_more_than_perf,
)


def entry(model: str, metric: str, status: str = "done", score: Optional[float] = None,
          half_width: Optional[float] = None, rank: Optional[list] = None,
          submission: Optional[int] = 1, team: str = "lab-a") -> Dict[str, Any]:
    return {"task": "t", "dataset": "d", "round": None, "model": model, "team": team,
            "metric": metric, "name": metric.upper(), "submission": submission,
            "status": status, "score": score, "signature": f"{metric}|sig" if score else None,
            "n": 3, "mean": score, "half_width": half_width, "rank": rank, "tags": {},
            "message": "it died" if status == "failed" else None}


BOARD = {"task": "t", "perf": "comet", "jobs": {}, "metrics": [
    {"metric": "comet", "name": "COMET", "higher_is_better": True},
    {"metric": "ter", "name": "TER", "higher_is_better": False}],
    "datasets": [{"dataset": "d", "round": 2, "n": 3, "nrefs": 1, "models": [
        {"model": "m-one", "team": "lab-a", "submission": 5,
         "submitted": "2025-01-02T03:04:05Z", "description": "=HYPERLINK(\"http://x\")",
         "url": "https://example.org/paper"},
        {"model": "m-two", "team": "+team", "submission": 6,
         "submitted": "2025-01-03T00:00:00Z", "description": None, "url": None}], "entries": [
        entry("m-one", "comet", score=-0.25, half_width=0.125, rank=[1, 2], submission=5),
        entry("m-one", "ter", score=40.0, half_width=2.0, rank=[1, 1], submission=5),
        entry("m-two", "comet", score=-0.25, half_width=0.5, rank=[1, 2], submission=6,
              team="+team"),
        entry("m-two", "ter", "failed", submission=6, team="+team"),
        entry("m-three", "comet", "ranking", score=-0.75, submission=7),
        entry("m-three", "ter", "queued", submission=7)]}]}
DYNABOARD = {"perf": "comet", "samples": 10, "seed": 1, "left_out": [],
             "metrics": [{"metric": "comet", "weight": 4.0}, {"metric": "memory", "weight": 1.0}],
             "models": [{"model": "m-one", "dynascore": 2.5, "interval": [1.5, 3.5]},
                        {"model": "m-two", "dynascore": 3.0, "interval": [2.0, 4.0]}]}


def test_csv_keeps_statuses_numbers_and_neutralises_formulas():
    table = board_table(BOARD, "d", DYNABOARD)
    rows = list(csv.reader(io.StringIO(format_board(table, "csv"))))
    assert rows[0][3:] == ["COMET ↑", "COMET ±", "TER ↓", "TER ±", "Dynascore ↑",
                           "Dynascore 95% low", "Dynascore 95% high", "Submission",
                           "Submitted (UTC)", "Description", "URL"]
    assert rows[1] == ["1–2", "m-one", "lab-a", "-0.25", "0.125", "40.0", "2.0", "2.5", "1.5",
                       "3.5", "5", "2025-01-02T03:04:05Z", "'=HYPERLINK(\"http://x\")",
                       "https://example.org/paper"]
    assert rows[2] == ["1–2", "m-two", "'+team", "-0.25", "0.5", "failed", "", "3.0", "2.0",
                       "4.0", "6", "2025-01-03T00:00:00Z", "", ""]
    assert rows[3] == ["", "m-three", "lab-a", "-0.75", "", "queued", "", "", "", "", "7", "",
                       "", ""]


def test_latex_bolds_every_best_by_direction_and_says_what_is_missing():
    tex = format_board(board_table(BOARD, "d", DYNABOARD), "latex")
    lines = [line for line in tex.splitlines() if " & m-" in line]
    assert lines == [
        r"1--2 & m-one & lab-a & \textbf{-0.250} $\pm$ 0.125 & \textbf{40.0} $\pm$ 2.0 & "
        r"2.50 (1.50--3.50) & 2025-01-02 \\",
        r"1--2 & m-two & +team & \textbf{-0.250} $\pm$ 0.500 & failed & \textbf{3.00} "
        r"(2.00--4.00) & 2025-01-03 \\",
        r" & m-three & lab-a & -0.750 & queued & -- &  \\"]
    assert r"\begin{tabular}{lllrrrl}" in tex
    assert "% Dynascore: Dynabench's, weights comet 4, memory 1;" in tex


def test_json_keeps_each_entry_and_the_dynascore():
    found = json.loads(format_board(board_table(BOARD, "d", DYNABOARD), "json"))
    assert found["round"] == 2 and found["dynaboard"]["weights"] == {"comet": 4.0,
                                                                      "memory": 1.0}
    (three,) = [model for model in found["models"] if model["model"] == "m-three"]
    assert three["scores"]["comet"]["status"] == "ranking"
    assert three["scores"]["ter"]["score"] is None
    assert three["dynascore"] is None and three["rank"] is None
    assert found["models"][1]["scores"]["ter"]["message"] == "it died"
    assert found["models"][0]["description"] == '=HYPERLINK("http://x")'  # JSON runs nothing
    assert "HYPERLINK" not in format_board(board_table(BOARD, "d", DYNABOARD), "latex")


def test_a_dynaboard_of_the_perf_metric_alone_is_left_out():
    alone = dict(DYNABOARD, metrics=[{"metric": "comet", "weight": 1.0},
                                     {"metric": "memory", "weight": 0.0}])
    assert not weighs_more_than_perf(alone) and weighs_more_than_perf(DYNABOARD)
    text = format_board(board_table(BOARD, "d", alone), "csv")
    assert "Dynascore" not in text


@pytest.mark.parametrize("text, cell", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\r=x", "'\r=x"), ("lab-a", "lab-a"), ("a=b", "a=b")])
def test_text_cells_that_would_run_as_formulas(text, cell):
    assert text_cell(text) == cell


def test_an_unknown_dataset_or_format_is_an_error():
    with pytest.raises(EvalprotoError, match="the leaderboard of 't' has no dataset 'x'"):
        board_table(BOARD, "x")
    with pytest.raises(EvalprotoError, match="format 'xlsx' is none of csv, latex, json"):
        format_board(board_table(BOARD, "d"), "xlsx")
