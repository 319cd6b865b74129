"""Models as processes in the service: a task's I/O, models the server runs on every
dataset (and on datasets added later), their runs as jobs (failures said, models
stopped), their throughput and memory on the leaderboard, and the board's score of a
model equal to corpus-score's on what the same program writes when run by hand."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List

import pytest

import evalproto

from .conftest import jsonl, lines

NLI_MODEL = textwrap.dedent("""
    # an NLI model: "entailment" when the hypothesis is short beside the context
    import json, sys, time
    SETUP
    for line in sys.stdin:
        example = json.loads(line)
        FAULT
        short = len(example["hypothesis"].split()) <= len(example["context"].split())
        label = "entailment" if short else "neutral"
        print(json.dumps({"id": example["id"], "pred": label,
                          "prob": [0.9, 0.1] if short else [0.2, 0.8]}), flush=True)
""")


def nli_rows(first: int = 0, count: int = 60) -> List[Dict[str, Any]]:
    """Examples of real text: a reference as the context, a system's output as the
    hypothesis, labels that a length rule gets mostly right."""
    contexts, hypotheses = lines("de-en.ref.A.en"), lines("de-en.hyp.LT22.en")
    rows = []
    for number in range(first, first + count):
        context, hypothesis = contexts[number], hypotheses[number]
        label = ("entailment" if len(hypothesis.split()) < len(context.split())
                 else "neutral")
        rows.append({"uid": f"e{number}", "context": context, "hypothesis": hypothesis,
                     "answer": label, "tags": ["long" if len(context) > 80 else "short"]})
    return rows


def model_file(tmp_path: Path, name: str = "nli_model.py", setup: str = "pass",
               fault: str = "pass") -> str:
    path = tmp_path / name
    path.write_text(NLI_MODEL.replace("SETUP", setup).replace("FAULT", fault))
    return f"{sys.executable} {path}"


def nli_board(server: Any, tmp_path: Path, datasets: int = 1) -> Dict[str, str]:
    """Task nli (exact match, the I/O of the issue), teams lab-a and lab-b, and
    `datasets` datasets: dev (and test); the teams' tokens."""
    server.ok("POST", "/api/tasks", json={
        "name": "nli", "metrics": [{"spec": "exact-match"}], "perf": "exact-match",
        "input_keys": ["context", "hypothesis"], "output_keys": ["prob"]})
    tokens = {team: server.ok("POST", "/api/teams", json={"name": team})["token"]
              for team in ("lab-a", "lab-b")}
    for number, name in enumerate(["dev", "test"][:datasets]):
        data = jsonl(tmp_path / f"{name}.jsonl", nli_rows(60 * number)).read_bytes()
        server.ok("POST", f"/api/tasks/nli/datasets/{name}", content=data)
    return tokens


def by_hand(command: str, dataset: Path, out: Path) -> Path:
    """The model run by hand on a dataset: its input the rows' ids and input keys."""
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    given = "".join(json.dumps({"id": row["uid"], "context": row["context"],
                                "hypothesis": row["hypothesis"]}) + "\n" for row in rows)
    done = subprocess.run(command.split(), input=given, capture_output=True, text=True,
                          timeout=120, check=True)
    out.write_text(done.stdout)
    return out


def corpus_score(dataset: Path, predictions: Path) -> float:
    comparison = evalproto.score_files(
        [str(dataset)], [str(predictions)], [evalproto.MetricSpec("in-process", "exact-match")],
        evalproto.Analysis(), data_format="dynabench")
    (result,) = [result for result in comparison.results if result.group is None]
    return float(result.score)


def entries(server: Any, dataset: str) -> Dict[tuple, Dict[str, Any]]:
    return {(entry["model"], entry["metric"]): entry
            for entry in server.leaderboard("nli", dataset)}


def test_a_models_score_is_corpus_scores_on_what_it_writes_by_hand(database, start_service,
                                                                  tmp_path):
    server = start_service(database)
    nli_board(server, tmp_path)
    command = model_file(tmp_path)
    added = server.ok("POST", "/api/tasks/nli/models", json={
        "name": "length-rule", "team": "lab-a", "command": command, "timeout": 60})
    assert added == {"task": "nli", "model": "length-rule", "team": "lab-a", "timeout": 60.0,
                     "runs": 1}
    server.wait("nli")
    found = entries(server, "dev")
    expected = corpus_score(tmp_path / "dev.jsonl",
                            by_hand(command, tmp_path / "dev.jsonl", tmp_path / "by-hand.jsonl"))
    assert found["length-rule", "exact-match"]["score"] == expected
    assert 0 < expected < 100
    assert found["length-rule", "throughput"]["score"] > 0
    assert found["length-rule", "memory"]["score"] > 0
    assert found["length-rule", "throughput"]["half_width"] is None  # no interval
    board = server.ok("GET", "/api/tasks/nli/leaderboard", None)
    assert [(m["metric"], m["higher_is_better"]) for m in board["metrics"]] == [
        ("exact-match", True), ("throughput", True), ("memory", False)]
    model = server.ok("GET", "/api/tasks/nli/models/length-rule", None)
    (run,) = model["runs"]
    assert (run["dataset"], run["status"], run["submission"]) == ("dev", "done", 1)
    assert run["throughput"] == found["length-rule", "throughput"]["score"]
    stored = server.request("GET", "/api/tasks/nli/datasets/dev/stats/length-rule", None)
    assert stored.status_code == 200  # an export holds it, as a team's submission


def test_a_dataset_added_later_is_run_for_every_model(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}", jobs=2)
    tokens = nli_board(server, tmp_path)
    first, second = model_file(tmp_path), model_file(tmp_path, "second.py",
                                                     fault='example["hypothesis"] += " x"')
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "first", "team": "lab-a", "command": first})
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "second", "team": "lab-b", "command": second})
    submitted = jsonl(tmp_path / "team.jsonl", [{"id": row["uid"], "pred": "neutral"}
                                                for row in nli_rows()])
    server.ok("POST", "/api/tasks/nli/datasets/dev/models/by-hand", tokens["lab-a"],
              content=submitted.read_bytes())
    server.wait("nli")
    later = jsonl(tmp_path / "later.jsonl", nli_rows(60, 40)).read_bytes()
    added = server.ok("POST", "/api/tasks/nli/datasets/later", content=later)
    assert added["runs"] == 2  # a run of each model the server runs, none for the team's
    server.wait("nli")
    found = entries(server, "later")
    assert {model for model, _ in found} == {"first", "second"}
    for model, command in (("first", first), ("second", second)):
        expected = corpus_score(tmp_path / "later.jsonl", by_hand(
            command, tmp_path / "later.jsonl", tmp_path / f"{model}.jsonl"))
        assert found[model, "exact-match"]["score"] == expected
        assert found[model, "exact-match"]["status"] == "done"


def test_a_reply_lacking_an_output_key_fails_its_run_and_stores_nothing(start_service,
                                                                       tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    nli_board(server, tmp_path)
    command = model_file(tmp_path, fault=(
        'if example["id"] == "e3": print(json.dumps({"id": "e3", "pred": "x"}), '
        'flush=True); continue'))
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "forgetful", "team": "lab-a", "command": command})
    server.wait("nli")
    found = entries(server, "dev")
    failed = found["forgetful", "exact-match"]
    assert failed["status"] == "failed" and failed["score"] is None
    assert "example 4 (id 'e3'): the reply has no key 'prob'" in failed["message"]
    assert found["forgetful", "throughput"]["status"] == "failed"
    model = server.ok("GET", "/api/tasks/nli/models/forgetful", None)
    assert model["submissions"] == [] and model["runs"][0]["status"] == "failed"
    text = server.board("leaderboard", "nli").stdout
    assert "forgetful, exact-match: failed: " in text and "no key 'prob'" in text


def test_throughput_and_memory_as_the_server_measures_them(start_service, tmp_path):
    """A model sleeping 20 ms an example shows under 55 examples a second; one holding
    300 MB shows at least 0.28 GiB."""
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    nli_board(server, tmp_path)
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "slow", "team": "lab-a", "command": model_file(
            tmp_path, "slow.py", fault="time.sleep(0.02)")})
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "big", "team": "lab-b", "command": model_file(
            tmp_path, "big.py", setup="held = bytearray(300 << 20)")})
    server.wait("nli")
    found = entries(server, "dev")
    assert found["slow", "throughput"]["score"] < 55
    assert found["big", "memory"]["score"] >= 0.28
    assert found["big", "throughput"]["score"] > found["slow", "throughput"]["score"]
    assert found["big", "throughput"]["rank"] == [1, 1]
    assert found["slow", "memory"]["rank"] == [1, 1]  # lower is better


def test_a_hung_model_is_stopped_at_its_timeout_and_its_run_says_so(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    nli_board(server, tmp_path)
    command = model_file(tmp_path, fault='time.sleep(600) if example["id"] == "e2" else None')
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "hung", "team": "lab-a", "command": command, "timeout": 1})
    server.wait("nli")
    (run,) = server.ok("GET", "/api/tasks/nli/models/hung", None)["runs"]
    assert run["status"] == "failed"
    assert "example 3 (id 'e2'): no reply within 1 s (the model's --timeout); the model was " \
           "stopped" in run["message"]


def test_adding_a_model_or_a_dataset_refuses_what_it_cannot_take(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    tokens = nli_board(server, tmp_path)
    good = {"name": "m", "team": "lab-a", "command": model_file(tmp_path)}
    for token, body, status, said in (
            (None, good, 401, "adding a model needs the admin token"),
            (tokens["lab-a"], good, 403, "adding a model needs the admin token"),
            ("ADMIN", dict(good, team="nobody"), 404, "there is no team 'nobody'"),
            ("ADMIN", dict(good, command="python 'unclosed"), 400,
             "command: cannot parse the model's command"),
            ("ADMIN", dict(good, command=""), 422, "command"),
            ("ADMIN", dict(good, timeout=0), 400, "timeout: 0.0 is not a number of seconds"),
            ("ADMIN", dict(good, name="Bad Name"), 400, "model name 'Bad Name' is not valid")):
        response = server.request("POST", "/api/tasks/nli/models",
                                  **({} if token == "ADMIN" else {"token": token}), json=body)
        assert response.status_code == status, (body, response.text)
        assert said in response.json()["error"]
    assert server.request("POST", "/api/tasks/nope/models", json=good).status_code == 404
    server.ok("POST", "/api/tasks/nli/models", json=good)
    again = server.request("POST", "/api/tasks/nli/models", json=good)
    assert again.status_code == 409 and "the task has a model 'm' already" in again.text
    rows = nli_rows(0, 5)
    del rows[3]["hypothesis"]
    missing = server.request("POST", "/api/tasks/nli/datasets/broken",
                             content=jsonl(tmp_path / "broken.jsonl", rows).read_bytes())
    assert missing.status_code == 400
    assert missing.json()["error"] == ("broken.jsonl: line 4: no 'hypothesis' field, one of "
                                       "the task's input keys (context, hypothesis)")
    for keys, said in ((["id"], "input key 'id': every example carries it already"),
                       (["a b"], "input key 'a b' is not valid"),
                       (["x", "x"], "input key 'x' is given twice")):
        response = server.request("POST", "/api/tasks", json={
            "name": "t2", "metrics": [{"spec": "bleu"}], "input_keys": keys})
        assert response.status_code == 400 and said in response.json()["error"]
    response = server.request("POST", "/api/tasks", json={
        "name": "t2", "metrics": [{"spec": "bleu"}], "output_keys": ["pred"]})
    assert "output key 'pred': every reply carries it already" in response.json()["error"]


def test_the_board_commands_for_models(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    done = server.board("add-task", "nli", "--metric", "exact-match", "--perf", "exact-match",
                        "--input-keys", "context,hypothesis", "--output-keys", "prob")
    assert done.exit_code == 0, done.output
    assert done.stdout == ("Task nli: exact-match (exact-match); ranked by exact-match. Models "
                           "receive context, hypothesis and reply with pred, prob.\n")
    server.board("add-team", "lab-a")
    data = jsonl(tmp_path / "dev.jsonl", nli_rows())
    assert server.board("add-dataset", "nli", "dev", str(data)).exit_code == 0
    done = server.board("add-model", "nli", "my-model", "--team", "lab-a", "--command",
                        model_file(tmp_path), "--timeout", "60")
    assert done.exit_code == 0, done.output
    assert done.stdout == "Model my-model (lab-a) added to task nli; 1 run queued.\n"
    done = server.board("add-dataset", "nli", "test", str(jsonl(
        tmp_path / "test.jsonl", nli_rows(60, 10))))
    assert done.stdout.endswith("; 1 run of the task's models queued.\n"), done.stdout
    done = server.board("leaderboard", "nli", "dev", "--wait", "-f", "json")
    metrics = [json.loads(line)["metric"] for line in done.stdout.splitlines()]
    assert metrics == ["exact-match", "throughput", "memory"]
    text = server.board("leaderboard", "nli", "dev").stdout
    header = text.splitlines()[1]
    assert header.split()[-3:] == ["exact-match", "throughput", "memory"]
    assert server.board("add-model", "nli", "x", "--command", "y").exit_code == 2  # no team


GATED_MODEL = textwrap.dedent("""
    import json, os, sys, time
    gate = sys.argv[1]
    for line in sys.stdin:
        example = json.loads(line)
        if os.path.exists(gate):
            open(gate + ".reached", "w").close()
            while os.path.exists(gate):  # a run as long as the test says
                time.sleep(0.02)
        print(json.dumps({"id": example["id"], "pred": "neutral", "prob": [0.5, 0.5]}),
              flush=True)
""")


@pytest.mark.parametrize("stop", ["SIGTERM", "kill -9"])
def test_a_stopped_or_killed_server_leaves_no_model_and_the_run_ends_once(
        database, start_server, tmp_path, stop):
    from conftest import assert_ends, running_commands

    from .conftest import until

    gate = tmp_path / "gate"
    model = tmp_path / "gated_model.py"
    model.write_text(GATED_MODEL)
    server = start_server(database)
    nli_board(server, tmp_path)
    gate.touch()
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "gated", "team": "lab-a", "command": f"{sys.executable} {model} {gate}"})
    until(lambda: Path(f"{gate}.reached").exists(), "the model's run to start")
    running = running_commands(str(gate))
    assert running
    if stop == "SIGTERM":
        assert server.stop() == 0, server.text()
    else:
        server.kill()
    for pid in running:
        assert_ends(pid)
    gate.unlink()  # the run now goes as fast as the model answers
    again = start_server(server.url)
    again.wait("nli")
    model_record = again.ok("GET", "/api/tasks/nli/models/gated", None)
    assert [run["status"] for run in model_record["runs"]] == ["done"]
    assert len(model_record["submissions"]) == 1  # ended once: one submission
    assert again.ok("GET", "/api/tasks/nli/jobs", None) == {
        "queued": 0, "running": 0, "done": 2, "failed": 0}  # the run and its scoring


@pytest.mark.dask
@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_runs_on_a_dask_cluster_give_the_same_figures(database, start_server, tmp_path):
    server = start_server(database, "--scheduler", "local:1")
    nli_board(server, tmp_path)
    command = model_file(tmp_path)
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "length-rule", "team": "lab-a", "command": command})
    server.wait("nli")
    found = entries(server, "dev")
    expected = corpus_score(tmp_path / "dev.jsonl",
                            by_hand(command, tmp_path / "dev.jsonl", tmp_path / "hand.jsonl"))
    assert found["length-rule", "exact-match"]["score"] == expected
    assert found["length-rule", "throughput"]["score"] > 0


def test_the_pages_show_runs_throughput_and_memory(start_service, tmp_path):
    from .boardpages import board_cells, parse

    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    nli_board(server, tmp_path)
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "length-rule", "team": "lab-a", "command": model_file(tmp_path),
        "timeout": 30})
    server.ok("POST", "/api/tasks/nli/models", json={
        "name": "broken", "team": "lab-b", "command": model_file(
            tmp_path, "broken.py", fault="sys.exit(5)")})
    server.wait("nli")
    found = entries(server, "dev")
    page = server.request("GET", "/tasks/nli", None).text
    cells = board_cells(page)
    assert cells["dev", "length-rule", "m1"]["value"] == repr(
        found["length-rule", "throughput"]["score"])
    assert cells["dev", "length-rule", "m2"]["value"] == repr(
        found["length-rule", "memory"]["score"])
    assert cells["dev", "broken", "m0"]["status"] == "failed"
    heads = {button.get("data-key"): button.get("title") for button in parse(page).xpath(
        "//table[@id='table-dev']/thead//button[@data-better]")}
    assert heads == {"m0": "higher is better", "m1": "higher is better",
                     "m2": "lower is better"}
    document = parse(server.request("GET", "/tasks/nli/models/length-rule", None).text)
    (row,) = document.xpath("//section[@id='runs']//tbody/tr")
    assert row.get("data-dataset") == "dev"
    assert row.xpath("./td[@data-status]/@data-status") == ["done"]
    assert row.xpath("./td/@data-value")[:2] == [
        repr(found["length-rule", "throughput"]["score"]),
        repr(found["length-rule", "memory"]["score"])]
    assert "waiting at most 30 s for each reply" in " ".join(
        document.xpath("//section[@id='runs']/p")[0].text_content().split())
    broken = parse(server.request("GET", "/tasks/nli/models/broken", None).text)
    message = broken.xpath("//section[@id='runs']//span[@class='message']")[0].text_content()
    assert "exit status 5" in message
