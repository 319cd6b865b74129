"""A dataset's leaderboard as a file (CSV, a LaTeX tabular, JSON), from the API and from
`evalproto board export --format`: every figure equal to the leaderboard's and the
Dynaboard's to the bit (LaTeX's rounded as the page rounds them, the best in bold),
every user string escaped for LaTeX and kept from running as a spreadsheet formula,
and the command's refusals of where it would write."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any, Dict, Iterator, List

import pytest
from sqlalchemy import create_engine

from evalproto.reports.latex import latex_escape
from evalproto.reports.leaderboard import rank_text
from evalproto.reports.report import decimals, fixed
from evalproto.service import auth, store
from evalproto.service.database import writing

from .conftest import InProcess, jsonl
from .test_service_dynaboard import exact_match_task, fill_board, predictions

HOSTILE_TEAM = "=HYPERLINK(\"http://x\")&%$#_{}~^\\ --"
"""A team's name (which the API would refuse) that a spreadsheet would run and that
holds every character LaTeX treats specially."""
DESCRIPTION = '=HYPERLINK("http://evil.example","click me")'
"""A team's own description of its model, which a spreadsheet would run."""
EXPORT = "/api/tasks/nli/datasets/dev/export"


@pytest.fixture(scope="module")
def board(tmp_path_factory: Any) -> Iterator[InProcess]:
    """The Dynaboard tests' board (task nli, dataset dev with a fairness and a
    robustness copy, three models), all scored."""
    directory = tmp_path_factory.mktemp("exports")
    server = InProcess(f"sqlite:///{directory / 'board.db'}", jobs=2).start()
    try:
        fill_board(server, directory)
        yield server
    finally:
        assert server.stop() == 0, server.text()


def exported(server: Any, board_format: str, path: str = EXPORT) -> str:
    response = server.request("GET", path, None, params={"format": board_format})
    assert response.status_code == 200, response.text
    return str(response.text)


def api_figures(server: Any) -> Dict[str, Any]:
    """The leaderboard's entries of dev by (model, metric), the Dynaboard's lines by
    model, and the submissions' times by id, as the API gives them."""
    entries = {(entry["model"], entry["metric"]): entry
               for entry in server.leaderboard("nli", "dev")}
    lines = {line["model"]: line for line in server.ok(
        "GET", "/api/tasks/nli/datasets/dev/dynaboard", None)["models"]}
    times = {entry["submission"]: server.ok("GET", f"/api/submissions/{entry['submission']}",
                                            None)["submitted"]
             for entry in entries.values()}
    return {"entries": entries, "dynaboard": lines, "submitted": times}


METRICS = ["exact-match", "chrf", "fairness", "robustness"]


def test_the_csv_holds_the_leaderboards_figures_to_the_bit(board):
    response = board.request("GET", EXPORT, None, params={"format": "csv"})
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="nli-dev.csv"'
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0] == ["Rank", "Model", "Team", "exact-match ↑", "exact-match ±", "chrF2 ↑",
                       "chrF2 ±", "fairness ↑", "fairness ±", "robustness ↑", "robustness ±",
                       "Dynascore ↑", "Dynascore 95% low", "Dynascore 95% high",
                       "Submission", "Submitted (UTC)", "Description", "URL"]
    api = api_figures(board)
    order = list(dict.fromkeys(model for model, _ in api["entries"]))
    assert [row[1] for row in rows[1:]] == order and len(order) == 3
    for row in rows[1:]:
        model = row[1]
        perf = api["entries"][model, "exact-match"]
        assert row[0] == rank_text(perf["rank"], "–") and row[2] == perf["team"]
        for number, metric in enumerate(METRICS):
            entry = api["entries"][model, metric]
            score, half_width = row[3 + 2 * number:5 + 2 * number]
            assert float(score) == entry["score"]
            assert (float(half_width) if half_width else None) == entry["half_width"]
        line = api["dynaboard"][model]
        assert [float(cell) for cell in row[11:14]] == [line["dynascore"], *line["interval"]]
        assert int(row[14]) == perf["submission"]
        assert row[15] == api["submitted"][perf["submission"]]
        assert row[16:] == ["", ""]  # no team said what its model is
    assert response.text.endswith("\n") and "\r" not in response.text


def test_the_json_holds_every_figure_as_the_api_gives_it(board):
    found = json.loads(exported(board, "json"))
    api = api_figures(board)
    dynaboard = board.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert (found["task"], found["dataset"], found["perf"], found["n"]) == (
        "nli", "dev", "exact-match", 90)
    assert [(metric["metric"], metric["higher_is_better"]) for metric in found["metrics"]] == [
        (metric, True) for metric in METRICS]
    assert found["dynaboard"]["weights"] == {
        metric["metric"]: metric["weight"] for metric in dynaboard["metrics"]}
    for record in found["models"]:
        model = record["model"]
        for metric in METRICS:
            entry = api["entries"][model, metric]
            assert record["scores"][metric] == {key: entry[key] for key in (
                "status", "score", "mean", "half_width", "rank", "tags", "message")}
        assert record["rank"] == api["entries"][model, "exact-match"]["rank"]
        line = api["dynaboard"][model]
        assert (record["dynascore"], record["dynascore_interval"]) == (
            line["dynascore"], line["interval"])
        assert record["submitted"] == api["submitted"][record["submission"]]


def test_the_latex_is_a_tabular_rounded_as_the_page_with_the_best_in_bold(board):
    response = board.request("GET", EXPORT, None, params={"format": "latex"})
    assert response.headers["content-type"] == "text/x-tex; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="nli-dev.tex"'
    tex = response.text
    assert tex.count(r"\begin{tabular}{lll" + "r" * 5 + "l}") == 1
    assert tex.count(r"\end{tabular}") == 1 and "booktabs" not in tex
    assert (r"Rank & Model & Team & exact-match $\uparrow$ & chrF2 $\uparrow$ & fairness "
            r"$\uparrow$ & robustness $\uparrow$ & Dynascore $\uparrow$ & Submitted \\") in tex
    api = api_figures(board)
    rows = {line.split(" & ")[1]: line.removesuffix(r" \\").split(" & ")
            for line in tex.splitlines() if " & model-" in line}
    assert len(rows) == 3
    for number, metric in enumerate(METRICS):
        scored = {model: api["entries"][model, metric] for model in rows}
        places = (2 if metric in ("fairness", "robustness")
                  else decimals([entry["score"] for entry in scored.values()], 1))
        best = max(entry["score"] for entry in scored.values())
        for model, entry in scored.items():
            shown = fixed(entry["score"], places, "--")
            if entry["score"] == best:
                shown = rf"\textbf{{{shown}}}"
            if entry["half_width"] is not None:
                shown += rf" $\pm$ {fixed(entry['half_width'], places, '--')}"
            assert rows[model][3 + number] == shown, (model, metric)
    for model, cells in rows.items():
        assert cells[-1] == api["submitted"][api["entries"][model, "chrf"]["submission"]][:10]
        assert cells[0] == rank_text(api["entries"][model, "exact-match"]["rank"], "--")
    assert sum(r"\textbf" in cells[7] for cells in rows.values()) == 1  # the best Dynascore


def test_the_board_command_writes_each_format_as_the_api_gives_it(board, tmp_path):
    for board_format in ("csv", "latex", "json"):
        target = tmp_path / f"board.{board_format}"
        target.write_text("an older file\n")
        done = board.board("export", "nli", "dev", "--format", board_format, "-o", str(target),
                           token=None)
        assert done.exit_code == 0, done.output
        assert target.read_text() == exported(board, board_format)
        assert f"as {board_format} to {target}" in done.stderr
        to_stdout = board.board("export", "nli", "dev", "-f", board_format, "-o", "-",
                                token=None)
        assert to_stdout.exit_code == 0 and to_stdout.stdout == exported(board, board_format)
    stats = board.board("export", "nli", "dev", "-o", str(tmp_path / "stats"), token=None)
    assert stats.exit_code == 0, stats.output
    assert sorted(path.name for path in (tmp_path / "stats").iterdir()) == [
        "model-0.stats", "model-1.stats", "model-2.stats"]


@pytest.mark.parametrize("args, status, said", [
    (["-f", "csv", "-o", "DIR"], 2, "is a directory; --format csv writes one file: name it "
                                    "(or - for standard output)"),
    (["-o", "-"], 2, "--format stats writes a file per model into a directory; -o - takes "
                     "--format csv, latex or json"),
    (["-f", "xlsx", "-o", "x"], 2, "'xlsx' is not one of 'stats', 'csv', 'latex', 'json'"),
    (["-f", "csv", "-o", "NEW"], 1, "Error: the task has no dataset 'nope'"),
])
def test_the_board_command_refuses_where_it_cannot_write(board, tmp_path, args, status, said):
    args = [str(tmp_path) if arg == "DIR" else str(tmp_path / "new.csv") if arg == "NEW"
            else arg for arg in args]
    done = board.board("export", "nli", "nope" if status == 1 else "dev", *args, token=None)
    assert done.exit_code == status, done.output
    assert said in done.stderr and "Traceback" not in done.output
    assert not (tmp_path / "new.csv").exists()


def test_the_apis_refusals(board):
    for params, status, said in (({"format": "xlsx"}, 422, "format: Input should be 'csv', "
                                                           "'latex' or 'json'"),
                                 ({}, 422, "format: Field required")):
        response = board.request("GET", EXPORT, None, params=params)
        assert response.status_code == status and said in response.json()["error"]
    response = board.request("GET", "/api/tasks/nope/datasets/dev/export", None,
                             params={"format": "csv"})
    assert response.status_code == 404 and response.json()["error"] == "no task 'nope'"


def test_the_task_page_links_each_datasets_files(board):
    page = board.request("GET", "/tasks/nli", None).text
    for board_format in ("csv", "latex", "json"):
        link = f'href="/api/tasks/nli/datasets/dev/export?format={board_format}" download'
        assert link in page
        assert exported(board, board_format)  # the link answers


def team_with_hostile_name(server: Any, tmp_path: Any) -> List[Dict[str, str]]:
    """Task plain (exact match, no copies): model-a of a team named HOSTILE_TEAM, put
    straight into the database (the API refuses such a name, an old record may hold
    one), and model-b of lab-z, described by its team in words a spreadsheet would run;
    scored. The dataset's rows."""
    rows = exact_match_task(server, tmp_path, "plain", 30)
    token = server.ok("POST", "/api/teams", json={"name": "lab-z"})["token"]
    server.ok("POST", "/api/tasks/plain/datasets/dev/models/model-b", token,
              params={"description": DESCRIPTION, "url": "https://example.org/b"},
              content=jsonl(tmp_path / "b.jsonl", predictions(rows, 16)).read_bytes())
    engine = create_engine(server.url)
    try:
        with writing(engine) as connection:
            store.add_team(connection, HOSTILE_TEAM, auth.token_hash(auth.new_token()))
            team = store.team(connection, HOSTILE_TEAM)
            task = store.task(connection, "plain")
            dataset = store.dataset(connection, task.id, "dev")
            store.submit(connection, task.id, team.id, "model-a", dataset.id,
                         jsonl(tmp_path / "a.jsonl", predictions(rows, 14)).read_bytes())
    finally:
        engine.dispose()
    server.wait("plain")
    return rows


def test_user_strings_are_escaped_and_no_dynascore_repeats_the_perf_score(board, tmp_path):
    team_with_hostile_name(board, tmp_path)
    path = "/api/tasks/plain/datasets/dev/export"
    rows = list(csv.reader(io.StringIO(exported(board, "csv", path))))
    teams = {row[1]: row[2] for row in rows[1:]}
    assert teams == {"model-a": "'" + HOSTILE_TEAM, "model-b": "lab-z"}
    # a Dynaboard of the perf metric alone gives its score again: no Dynascore column
    assert rows[0] == ["Rank", "Model", "Team", "exact-match ↑", "exact-match ±", "Submission",
                       "Submitted (UTC)", "Description", "URL"]
    described = {row[1]: row[7:] for row in rows[1:]}
    assert described["model-b"] == ["'" + DESCRIPTION, "https://example.org/b"]
    tex = exported(board, "latex", path)
    (line,) = [line for line in tex.splitlines() if " & model-a & " in line]
    escaped = ('=HYPERLINK("http://x")' + r"\&\%\$\#\_\{\}\textasciitilde{}"
               r"\textasciicircum{}\textbackslash{} -{}-")
    assert escaped == latex_escape(HOSTILE_TEAM)
    assert line.split(" & ")[2] == escaped
    assert len(re.findall(r"(?<!\\)&", line)) == 4  # only the tabular's own separators
    assert "Dynascore" not in tex
    found = json.loads(exported(board, "json", path))
    assert found["dynaboard"] is None and "dynascore" not in found["models"][0]
    assert {record["team"] for record in found["models"]} == {HOSTILE_TEAM, "lab-z"}
    assert DESCRIPTION in [record["description"] for record in found["models"]]
    assert "evil.example" not in tex  # a team's words stay out of a paper's table
