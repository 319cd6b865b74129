"""Snapshots of a task's boards: taken by the admin only, each with an id, holding the
leaderboard and the Dynaboards as the API gave them then, unchanged to the byte (JSON
and page) by later submissions while the live board moves on; listed on the task's
page; stored whole or not at all; read back with `board leaderboard --snapshot`."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from evalproto.service import store

from .boardpages import board_cells, parse
from .conftest import jsonl
from .test_service_dynaboard import exact_match_task, fill_board, predictions

TAKEN = "taking a snapshot needs the admin token"


@pytest.fixture
def board(start_service, tmp_path):
    """The Dynaboard tests' board (task nli: dev with two copies, three models)."""
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}", jobs=2)
    _, rows, _, _, _ = fill_board(server, tmp_path)
    return server, rows


def submit_another(server: Any, tmp_path: Any, rows: List[Dict[str, Any]], task: str = "nli",
                   model: str = "model-9") -> None:
    """A new team's model on dev, scored."""
    token = server.ok("POST", "/api/teams", json={"name": f"lab-{model}"})["token"]
    server.ok("POST", f"/api/tasks/{task}/datasets/dev/models/{model}", token,
              content=jsonl(tmp_path / f"{model}.jsonl", predictions(rows, 20)).read_bytes())
    server.wait(task)


def test_a_snapshot_is_frozen_while_the_live_board_moves_on(board, tmp_path):
    server, rows = board
    live = server.ok("GET", "/api/tasks/nli/leaderboard", None)
    dynaboard = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    text = server.board("leaderboard", "nli", token=None).stdout
    taken = server.board("snapshot", "nli")
    assert taken.exit_code == 0, taken.output
    assert taken.stdout == "1\n" and "Snapshot 1 of task nli taken at " in taken.stderr
    found = server.ok("GET", "/api/snapshots/1", None)
    assert {key: found[key] for key in live} == live
    assert (found["id"], found["task"]) == (1, "nli")
    assert found["dynaboards"] == {"dev": dynaboard}  # the copies have none of their own
    assert found["without_dynaboard"] == {}
    (listed,) = server.ok("GET", "/api/tasks/nli/snapshots", None)
    assert listed == {"id": 1, "task": "nli", "taken": found["taken"]}
    json_before = server.request("GET", "/api/snapshots/1", None).content
    page_before = server.request("GET", "/snapshots/1", None)
    assert page_before.status_code == 200

    submit_another(server, tmp_path, rows)
    assert "model-9" in {entry["model"] for entry in server.leaderboard("nli", "dev")}
    assert server.ok("GET", "/api/tasks/nli/leaderboard", None) != live
    assert server.request("GET", "/api/snapshots/1", None).content == json_before
    assert server.request("GET", "/snapshots/1", None).content == page_before.content
    assert server.board("leaderboard", "nli", "--snapshot", "1", token=None).stdout == text
    assert server.board("leaderboard", "nli", token=None).stdout != text
    second = server.ok("POST", "/api/tasks/nli/snapshots")
    assert second["id"] == 2 and "model-9" in str(server.ok("GET", "/api/snapshots/2", None))
    listing = server.board("snapshots", "nli", token=None).stdout.splitlines()
    assert [line.split("\t")[0] for line in listing] == ["1", "2"]


def test_the_snapshots_page_shows_what_was_frozen(board):
    server, _ = board
    # every figure computed first, so that the task's page, kept by its task's version,
    # is made again only because a snapshot was taken
    server.ok("GET", "/api/tasks/nli/leaderboard", None)
    server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    before = parse(server.request("GET", "/tasks/nli", None).text)
    assert before.xpath("//section[@id='snapshots']") == []
    server.ok("POST", "/api/tasks/nli/snapshots")
    frozen = server.ok("GET", "/api/snapshots/1", None)
    page = server.request("GET", "/snapshots/1", None).text
    heading = parse(page).xpath("//h1")[0].text_content()
    assert heading == (f"Snapshot 1 of task nli, taken {frozen['taken'].replace('T', ' ')} "
                       f"— frozen")
    cells = board_cells(page)
    entries = {(section["dataset"], entry["model"], entry["metric"]): entry
               for section in frozen["datasets"] for entry in section["entries"]}
    keys = {metric["metric"]: f"m{number}" for number, metric in enumerate(frozen["metrics"])}
    assert len(entries) > 12
    for (dataset, model, metric), entry in entries.items():
        assert float(cells[dataset, model, keys[metric]]["value"]) == entry["score"]
    scores = parse(page).xpath("//table[@id='dynaboard-table-dev']//td[@data-key='dynascore']"
                               "/@data-value")
    assert [float(value) for value in scores] == [
        line["dynascore"] for line in frozen["dynaboards"]["dev"]["models"]]
    sorted_page = server.request("GET", "/snapshots/1", None, params={"sort": "-model"}).text
    assert 'action="/snapshots/1#dataset-dev"' in sorted_page
    assert [row.get("data-model") for row in parse(sorted_page).xpath(
        "//table[@id='table-dev']/tbody/tr")] == ["model-2", "model-1", "model-0"]
    task_page = parse(server.request("GET", "/tasks/nli", None).text)
    (link,) = task_page.xpath("//section[@id='snapshots']//a")
    assert (link.get("href"), link.text_content()) == ("/snapshots/1", "Snapshot 1")


def test_only_the_admin_takes_a_snapshot_and_unknown_ids_are_404(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    server.ok("POST", "/api/tasks", json={"name": "nli", "metrics": [{"spec": "exact-match"}]})
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    for given, status, said in ((None, 401, TAKEN), (token, 403, f"{TAKEN}; this one is not it")):
        response = server.request("POST", "/api/tasks/nli/snapshots", given)
        assert response.status_code == status and response.json()["error"].startswith(said)
    done = server.board("snapshot", "nli", token=token)
    assert done.exit_code == 1 and f"Error: {TAKEN}; this one is not it" in done.stderr
    assert server.ok("GET", "/api/tasks/nli/snapshots", None) == []
    for path, status, said in (
            ("/api/snapshots/7", 404, "no snapshot 7"),
            ("/api/snapshots/99999999999", 404, "no snapshot 99999999999"),
            ("/api/snapshots/-1", 404, "no snapshot -1"),
            ("/api/snapshots/seven", 422, "snapshot: Input should be a valid integer"),
            ("/api/tasks/nope/snapshots", 404, "no task 'nope'")):
        response = server.request("GET", path, None)
        assert response.status_code == status and said in response.json()["error"], path
    response = server.request("POST", "/api/tasks/nope/snapshots")
    assert response.status_code == 404 and response.json()["error"] == "no task 'nope'"
    for path, status in (("/snapshots/7", 404), ("/snapshots/seven", 422)):
        page = server.request("GET", path, None)
        assert page.status_code == status and page.headers["content-type"].startswith(
            "text/html")
        assert "Traceback" not in page.text
    assert "no snapshot 7" in server.request("GET", "/snapshots/7", None).text
    shown = server.board("leaderboard", "nli", "--snapshot", "7", token=None)
    assert shown.exit_code == 1 and "Error: no snapshot 7" in shown.stderr
    waiting = server.board("leaderboard", "nli", "--snapshot", "7", "--wait", token=None)
    assert waiting.exit_code == 2 and "it has no jobs to --wait for" in waiting.stderr
    assert server.board("snapshots", "nli", token=None).stdout == "No snapshot of nli yet.\n"


def test_a_snapshot_is_stored_whole_or_not_at_all(start_service, tmp_path, monkeypatch):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    server.ok("POST", "/api/tasks", json={"name": "nli", "metrics": [{"spec": "exact-match"}]})
    server.ok("POST", "/api/tasks", json={"name": "other", "metrics": [{"spec": "chrf"}]})
    stored = store.add_snapshot

    def then_fails(connection: Any, task_id: int, data: bytes) -> Any:
        stored(connection, task_id, data)  # inserted, then the transaction fails
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(store, "add_snapshot", then_fails)
    assert server.request("POST", "/api/tasks/nli/snapshots").status_code == 500
    monkeypatch.undo()
    assert server.ok("GET", "/api/tasks/nli/snapshots", None) == []
    assert server.ok("POST", "/api/tasks/nli/snapshots")["id"] == 1
    frozen = server.ok("GET", "/api/snapshots/1", None)
    assert frozen["datasets"] == [] and frozen["dynaboards"] == {}
    other = server.board("leaderboard", "other", "--snapshot", "1", token=None)
    assert other.exit_code == 1
    assert "Error: snapshot 1 is of task 'nli', not 'other'" in other.stderr


def test_a_snapshot_on_each_database(database, start_service, tmp_path):
    server = start_service(database)
    rows = exact_match_task(server, tmp_path, count=30)
    submit_another(server, tmp_path, rows, model="first")
    taken = server.board("snapshot", "nli")
    assert taken.exit_code == 0 and taken.stdout == "1\n", taken.output
    before = server.request("GET", "/api/snapshots/1", None).content
    frozen = server.ok("GET", "/api/snapshots/1", None)
    assert [entry["model"] for entry in frozen["datasets"][0]["entries"]] == ["first"]
    assert frozen["dynaboards"]["dev"]["models"][0]["model"] == "first"
    submit_another(server, tmp_path, rows, model="second")
    assert len(server.leaderboard("nli", "dev")) == 2
    assert server.request("GET", "/api/snapshots/1", None).content == before
