"""Every bad input and every missing or wrong token gets a 4xx answer that names the
line, the id or the name, and stores nothing; the server logs one line per error with
the request's id, never a traceback, and keeps serving."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from sqlalchemy import create_engine, func, select

from evalproto.service import schema
from evalproto.service.schema import metadata

from .conftest import ADMIN, SERVED, Server, dataset_rows, jsonl, lines, served, until

MAX_UPLOAD = 50_000


def rows_of(predictions: List[Dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in predictions).encode()


def good_predictions() -> List[Dict[str, Any]]:
    return [{"id": f"s{number}", "pred": hyp}
            for number, hyp in enumerate(lines("de-en.hyp.LT22.en")[:10], 1)]


@pytest.fixture(scope="module", params=SERVED)
def board(request: Any, tmp_path_factory: Any) -> Iterator[Tuple[Any, Dict[str, str]]]:
    """A service (--max-upload 50000) with a task, two teams, a dataset of 10 examples
    and one submission; and the teams' tokens."""
    directory = tmp_path_factory.mktemp("refusals")
    server = served(request.param, request, directory, "--max-upload", str(MAX_UPLOAD),
                    max_upload=MAX_UPLOAD).start()
    try:
        server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [{"spec": "bleu"}]})
        tokens = {team: server.ok("POST", "/api/teams", json={"name": team})["token"]
                  for team in ("lab-a", "lab-b")}
        dataset = jsonl(directory / "ds.jsonl", dataset_rows()[:10]).read_bytes()
        server.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset)
        server.ok("POST", "/api/tasks/mt/datasets/ds/models/m1", tokens["lab-a"],
                  content=rows_of(good_predictions()))
        server.wait("mt")
        yield server, tokens
    finally:
        server.stop()


def stored(url: str) -> Dict[str, Any]:
    """Every table's rows, as they are: what a refused request must leave alone (all
    but the servers' heartbeats, which a live server moves on by itself)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return {table.name: sorted(map(tuple, connection.execute(select(
                *[column for column in table.columns if column.name != "heartbeat"]))),
                key=repr) for table in metadata.sorted_tables}
    finally:
        engine.dispose()


def count(url: str, table: Any) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(table)).scalar_one())
    finally:
        engine.dispose()


def refused(server: Server, method: str, path: str, status: int, message: str,
            token: Any = ADMIN, **options: Any) -> None:
    """The request is refused with `status` and a message holding `message`; nothing
    is stored; the log has one line for it, with its request id; the server serves on."""
    before = stored(server.url)
    response = server.request(method, path, token, **options)
    assert response.status_code == status, response.text
    body = response.json()
    assert message in body["error"]
    request_id = response.headers["X-Request-ID"]
    assert body["request_id"] == request_id
    assert stored(server.url) == before
    logged = [line for line in server.text().splitlines() if request_id in line]
    assert len(logged) == 1 and f"-> {status}: " in logged[0]
    assert "Traceback" not in server.text()
    assert server.request("GET", "/api").status_code == 200


def predictions_with(change: Any) -> bytes:
    rows = good_predictions()
    change(rows)
    return rows_of(rows)


SUBMIT = "/api/tasks/mt/datasets/ds/models/m1"
PREDICTION_CASES = [
    ("missing id", predictions_with(lambda rows: rows.pop(3)), "no prediction for id 's4'"),
    ("duplicate id", predictions_with(lambda rows: rows.append(dict(rows[2]))),
     "m1.jsonl: line 11: duplicate prediction for id 's3'"),
    ("unknown id", predictions_with(lambda rows: rows.append({"id": "s99", "pred": "x"})),
     "prediction for id 's99', which is not in the dataset"),
    ("not JSON", rows_of(good_predictions()).replace(b'{"id": "s5"', b'{id: "s5"'),
     "m1.jsonl: line 5: not JSON"),
    ("not an object", b"[1, 2]\n", "m1.jsonl: line 1: expected a JSON object"),
    ("pred not a string", predictions_with(lambda rows: rows[6].update(pred=7)),
     "m1.jsonl: line 7: expected a string in 'pred'"),
    ("no id", predictions_with(lambda rows: rows[1].pop("id")),
     "m1.jsonl: line 2: a prediction needs an 'id'"),
    ("not UTF-8", b"\xff\xfe\n", "m1.jsonl: line 1: invalid UTF-8 (byte 0xff)"),
    ("not UTF-8 in a pred", rows_of(good_predictions()).replace(b'"s3", "pred": "',
                                                                b'"s3", "pred": "\xe9'),
     "m1.jsonl: line 3: invalid UTF-8 (byte 0xe9); expected UTF-8 text"),
    ("not UTF-8 in an unread field", rows_of(good_predictions()).replace(
        b'{"id": "s9"', b'{"note": "\xc3(", "id": "s9"'),
     "m1.jsonl: line 9: invalid UTF-8 (byte 0xc3); expected UTF-8 text"),
    ("empty", b"", "no prediction for id 's1'"),
]


@pytest.mark.parametrize("data, message", [case[1:] for case in PREDICTION_CASES],
                         ids=[case[0] for case in PREDICTION_CASES])
def test_a_bad_prediction_file_is_refused_naming_the_line_or_id(board, data, message):
    server, tokens = board
    refused(server, "POST", SUBMIT, 400, message, tokens["lab-a"], content=data)


def test_the_file_name_given_names_the_upload(board):
    server, tokens = board
    refused(server, "POST", SUBMIT, 400, "preds.jsonl: line 1: expected a JSON object",
            tokens["lab-a"], content=b"3\n", params={"filename": "preds.jsonl"})
    refused(server, "POST", SUBMIT, 400, "give a file's base name", tokens["lab-a"],
            content=b"3\n", params={"filename": "../../etc/passwd"})


def test_tokens_and_who_may_submit(board):
    server, tokens = board
    good = rows_of(good_predictions())
    refused(server, "POST", SUBMIT, 401, "needs the team's token", None, content=good)
    refused(server, "POST", SUBMIT, 401, "this token is no team's", "not-a-token",
            content=good)
    refused(server, "POST", SUBMIT, 403, "the admin token does not submit", ADMIN,
            content=good)
    refused(server, "POST", SUBMIT, 403, "belongs to team 'lab-a'", tokens["lab-b"],
            content=good)
    refused(server, "POST", SUBMIT, 401, "needs the team's token", None, content=good,
            headers={"Authorization": "Basic abc"})


def test_unknown_and_bad_names(board):
    server, tokens = board
    good = rows_of(good_predictions())
    refused(server, "POST", "/api/tasks/nope/datasets/ds/models/m1", 404, "no task 'nope'",
            tokens["lab-a"], content=good)
    refused(server, "POST", "/api/tasks/mt/datasets/nope/models/m1", 404,
            "the task has no dataset 'nope'", tokens["lab-a"], content=good)
    refused(server, "POST", "/api/tasks/mt/datasets/ds/models/My_Model", 400,
            "model name 'My_Model' is not valid", tokens["lab-a"], content=good)
    refused(server, "POST", "/api/tasks/mt/datasets/ds/models/-m", 400,
            "model name '-m' is not valid", tokens["lab-a"], content=good)
    refused(server, "POST", f"/api/tasks/mt/datasets/ds/models/{'m' * 65}", 400,
            "at most 64 characters", tokens["lab-a"], content=good)
    for path, message in (("/api/tasks/nope/leaderboard", "no task 'nope'"),
                          ("/api/tasks/mt/models/nope", "the task has no model 'nope'"),
                          ("/api/submissions/999", "no submission 999"),
                          ("/api/tasks/mt/datasets/ds/stats/nope", "no submission on"),
                          ("/api/nothing-here", "no such resource")):
        refused(server, "GET", path, 404, message)
    refused(server, "GET", "/api/tasks/mt/leaderboard", 400, "dataset name 'A B'",
            params={"dataset": "A B"})
    refused(server, "GET", "/api/submissions/x", 422, "submission")


def test_an_upload_beyond_max_upload(board):
    server, tokens = board
    large = rows_of(good_predictions()) * (2 * MAX_UPLOAD // len(rows_of(good_predictions())))
    refused(server, "POST", SUBMIT, 413, f"--max-upload ({MAX_UPLOAD} bytes)",
            tokens["lab-a"], content=large)

    def chunks() -> Iterator[bytes]:  # no declared length: counted as it comes
        for _ in range(6):
            yield b" " * 10_000

    refused(server, "POST", SUBMIT, 413, "--max-upload", tokens["lab-a"], content=chunks())
    refused(server, "POST", "/api/tasks", 413, "--max-upload",
            json={"name": "big", "metrics": [{"spec": "x" * MAX_UPLOAD}]})


ADMIN_ACTIONS = [
    ("POST", "/api/tasks", {"json": {"name": "t2", "metrics": [{"spec": "bleu"}]}},
     "adding a task"),
    ("POST", "/api/teams", {"json": {"name": "lab-c"}}, "adding a team"),
    ("POST", "/api/tasks/mt/datasets/d2", {"content": b'{"id": 1, "answer": "x"}\n'},
     "adding a dataset"),
    ("POST", "/api/tasks/mt/metrics", {"json": {"spec": "chrf"}}, "adding a metric"),
    ("POST", "/api/tasks/mt/snapshots", {}, "taking a snapshot"),
]


@pytest.mark.parametrize("method, path, body, action", ADMIN_ACTIONS,
                         ids=[case[3] for case in ADMIN_ACTIONS])
def test_admin_actions_need_the_admin_token(board, method, path, body, action):
    server, tokens = board
    refused(server, method, path, 401, f"{action} needs the admin token", None, **body)
    refused(server, method, path, 403, f"{action} needs the admin token; this one is not it",
            tokens["lab-a"], **body)
    refused(server, method, path, 403, "this one is not it", ADMIN + "x", **body)


DATASET = "/api/tasks/mt/datasets/d2"
DATASET_CASES = [
    (b'{"id": "a"}\n', "d2.jsonl: line 1: no 'answer' field"),
    (b'{"id": "a", "answer": "x"}\n{"uid": "a", "answer": "y"}\n',
     "d2.jsonl: line 2: duplicate example id 'a'"),
    (b'{"id": "a", "answer": "x"}\nnope\n', "d2.jsonl: line 2: not JSON"),
    (b'{"id": "a", "answer": 3}\n', "d2.jsonl: line 1: 'answer' must be a string"),
    (b'{"id": "a", "answer": "x", "tags": "t"}\n',
     "d2.jsonl: line 1: 'tags' must be a list of strings"),
    (b'{"answer": "x"}\n', "d2.jsonl: line 1: an example needs a 'uid' or an 'id'"),
    (b"", "d2.jsonl: the dataset has no examples"),
    (b'{"id": "a\\tb", "answer": "x"}\n',
     "d2.jsonl: segment id 'a\\tb' holds a tab or a line break"),
    (b'{"id": "a", "answer": "x"}\n{"id": "b\\nc", "answer": "y"}\n',
     "d2.jsonl: segment id 'b\\nc' holds a tab or a line break"),
]


@pytest.mark.parametrize("data, message", DATASET_CASES,
                         ids=[case[1].split(": ", 1)[1] for case in DATASET_CASES])
def test_a_bad_dataset_is_refused_naming_the_line(board, data, message):
    server, _ = board
    refused(server, "POST", DATASET, 400, message, content=data)


def test_what_is_there_already_or_cannot_be(board):
    server, _ = board
    refused(server, "POST", "/api/tasks", 409, "there is a task 'mt' already",
            json={"name": "mt", "metrics": [{"spec": "bleu"}]})
    refused(server, "POST", "/api/teams", 409, "there is a team 'lab-a' already",
            json={"name": "lab-a"})
    refused(server, "POST", "/api/tasks/mt/datasets/ds", 409,
            "the task has a dataset 'ds' already", content=b'{"id": 1, "answer": "x"}\n')
    refused(server, "POST", "/api/tasks/mt/metrics", 409, "the task has the metric 'bleu'",
            json={"spec": "bleu -tok 13a"})
    refused(server, "POST", "/api/tasks/nope/metrics", 404, "no task 'nope'",
            json={"spec": "ter"})
    refused(server, "POST", "/api/tasks", 400, "metric 'bleu --nonsense'",
            json={"name": "t2", "metrics": [{"spec": "bleu --nonsense"}]})
    refused(server, "POST", "/api/tasks", 400, "metric 'no-such-metric'",
            json={"name": "t2", "metrics": [{"spec": "no-such-metric"}]})
    refused(server, "POST", "/api/tasks", 400, "metric 'no-such-program-here'",
            json={"name": "t2", "metrics": [{"spec": "no-such-program-here",
                                            "kind": "command"}]})
    refused(server, "POST", "/api/tasks", 400, "the perf metric 'ter' is not one of",
            json={"name": "t2", "metrics": [{"spec": "bleu"}], "perf": "ter"})
    refused(server, "POST", "/api/tasks", 400, "the metric 'bleu' is given twice",
            json={"name": "t2", "metrics": [{"spec": "bleu"}, {"spec": "bleu"}]})
    refused(server, "POST", "/api/tasks", 400, "task name 'T 2' is not valid",
            json={"name": "T 2", "metrics": [{"spec": "bleu"}]})
    refused(server, "POST", "/api/tasks", 422, "metrics", json={"name": "t2", "metrics": []})
    refused(server, "POST", "/api/tasks", 422, "JSON", content=b"{nope",
            headers={"Content-Type": "application/json"})
    refused(server, "POST", "/api/tasks/mt/datasets/d2", 422, "round",
            content=b'{"id": 1, "answer": "x"}\n', params={"round": -1})


def test_the_refusals_stored_nothing_and_the_board_still_works(board):
    server, tokens = board
    assert count(server.url, schema.submissions) == 1
    assert count(server.url, schema.predictions) == 1
    server.ok("POST", SUBMIT, tokens["lab-a"], content=rows_of(good_predictions()))
    server.wait("mt")
    (entry,) = server.leaderboard("mt")
    assert entry["model"] == "m1" and entry["status"] == "done" and entry["submission"] == 2
    assert count(server.url, schema.submissions) == 2
    assert count(server.url, schema.predictions) == 1  # the same file, kept once
    assert count(server.url, schema.evaluations) == 1  # and scored once


def test_no_body_is_read_before_the_token_is_checked(board):
    """Without the right token, a request is refused for that, whatever its body: a
    body is neither parsed (a 422 would say it was) nor read (a 413 would)."""
    server, tokens = board
    refused(server, "POST", "/api/tasks", 401, "adding a task needs the admin token", None,
            content=b"{nope", headers={"Content-Type": "application/json"})
    refused(server, "POST", "/api/teams", 403, "adding a team needs the admin token",
            tokens["lab-a"], json={"name": ["not", "a", "name"]})
    big = b" " * (MAX_UPLOAD + 1)
    refused(server, "POST", SUBMIT, 401, "needs the team's token", None, content=big)
    refused(server, "POST", SUBMIT, 401, "this token is no team's", "not-a-token",
            content=big)
    refused(server, "POST", DATASET, 401, "adding a dataset needs the admin token", None,
            content=big)
    refused(server, "POST", "/api/tasks", 401, "adding a task needs the admin token", None,
            content=big)


def test_a_task_has_a_bounded_number_of_metrics_and_few_problems_are_named(board):
    server, _ = board
    many = [{"spec": ""} for _ in range(65)]
    refused(server, "POST", "/api/tasks", 422, "metrics: List should have at most 64 items",
            json={"name": "t2", "metrics": many})
    response = server.request("POST", "/api/tasks", json={"name": "t2", "metrics": many[:60]})
    assert response.status_code == 422
    message = response.json()["error"]
    assert message.count("String should have at least 1 character") == 3, message
    assert message.endswith("and 57 more problems"), message
    refused(server, "POST", "/api/tasks", 422, "name: String should have at most 1000",
            json={"name": "t" * 1001, "metrics": [{"spec": "bleu"}]})


def test_a_json_body_is_small(tmp_path, start_service):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    spec = {"spec": "bleu " + "x" * 990}
    response = server.request("POST", "/api/tasks",
                              json={"name": "t", "metrics": [spec] * 64, "pad": "y" * 300_000})
    assert response.status_code == 413, response.text
    assert "a JSON request's body is at most 262144 bytes" in response.json()["error"]
    assert server.request("GET", "/api").status_code == 200


def test_numbers_out_of_range_or_not_ascii_are_refused_or_ignored(board):
    """Rounds and ids beyond the database's integers, and digits that are not ASCII
    ("²".isdigit() is true; int("²") fails), are refused in words, never a 500."""
    server, tokens = board
    for number in ("2147483648", "9223372036854775808", "99999999999999999999999"):
        refused(server, "GET", f"/api/submissions/{number}", 404, f"no submission {number}")
        refused(server, "POST", DATASET, 422, "round: Input should be less than or equal "
                "to 2147483647", content=b'{"id": "a", "answer": "x"}\n',
                params={"round": number})
    refused(server, "GET", "/api/submissions/²", 422, "submission")
    for params in ({"round": "²"}, {"submitted": "²"}, {"round": "99999999999"},
                   {"submitted": "9223372036854775808"}):
        response = server.request("GET", "/tasks/mt", params=params)
        assert response.status_code == 200, (params, response.text)
        assert "m1" in response.text
    response = server.request("POST", "/tasks/mt/admin/datasets", None, data={
        "token": ADMIN, "dataset": "d3", "round": "²"},
        files={"file": ("d3.jsonl", b'{"id": "a", "answer": "x"}\n')})
    assert response.status_code == 400, response.text
    assert "round: &#39;²&#39; is not a whole number from 0 to 2147483647" in response.text
    assert "Traceback" not in server.text()


def test_a_path_cannot_write_a_line_into_the_log(board):
    """A path's control characters once decoded (%0C, a form feed, breaks a line for
    many readers; %1B starts a terminal's escape) are escaped in the log."""
    server, _ = board
    path = "/api/x%0Crequest 000000000000: GET /forged -> 200: ok%1B[2K"
    refused(server, "GET", path, 404, "no such resource")
    text = server.text()
    assert "\x0c" not in text and "\x1b" not in text
    assert not any(line.startswith("request 000000000000") for line in text.splitlines())
    assert "GET /api/x\\x0crequest 000000000000: GET /forged -> 200: ok\\x1b[2K -> 404" in text


@pytest.mark.slow
def test_a_client_that_goes_away_mid_upload_is_no_server_error(tmp_path, start_server):
    """A body cut short by its client (a real socket, to a real server): one line at
    INFO, no ERROR, no 500."""
    import socket
    import time

    server = start_server(f"sqlite:///{tmp_path / 'board.db'}")
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [{"spec": "bleu"}]})
    tokens = {"lab-a": server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]}
    server.ok("POST", "/api/tasks/mt/datasets/ds",
              content=jsonl(tmp_path / "ds.jsonl", dataset_rows()[:10]).read_bytes())
    host, port = server.address.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall((f"POST {SUBMIT} HTTP/1.1\r\nHost: {host}\r\n"
                            f"Authorization: Bearer {tokens['lab-a']}\r\n"
                            f"Content-Length: 40000\r\n\r\n").encode() + b'{"id": "s1", ')
        time.sleep(0.5)  # the server is reading the body
    until(lambda: "the client went away before its body ended" in server.text(),
          "the server to see the client go")
    assert "-> 500" not in server.text() and "ClientDisconnect" not in server.text()
    assert server.request("GET", "/api").status_code == 200
