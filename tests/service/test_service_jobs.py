"""Jobs under stress, on SQLite and PostgreSQL: a server killed with -9 in the middle of
a job, then started again, gives the right leaderboard with nothing counted twice; 20
submissions at once are all there and right; a resubmission replaces its entry, the
earlier one stays readable, and predictions scored before are not scored again."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import assert_ends, running_commands
from sqlalchemy import create_engine, func, select

import evalproto
from evalproto.service import database as db
from evalproto.service import results, schema, store

from .conftest import dataset_rows, jsonl, lines, prediction_rows, until

GATED_EVALUATOR = textwrap.dedent("""
    import os, sys, time
    gate = sys.argv[1]
    for line in sys.stdin:
        command, *fields = [field.strip() for field in line.split("|||")]
        if command == "SCORE":
            if os.path.exists(gate):
                open(gate + ".reached", "w").close()
                while os.path.exists(gate):  # a job that takes as long as the test says
                    time.sleep(0.02)
            reply = f"1 {len(fields[0].split())} {len(fields[-1].split())}"
        elif command == "EVAL":
            reply = repr(sum(float(number) for number in fields[0].split()))
        else:
            reply = "ERROR unknown command"
        print(reply, flush=True)
""")


def query(url: str, statement: Any) -> List[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(statement))
    finally:
        engine.dispose()


def count(url: str, table: Any) -> int:
    return int(query(url, select(func.count()).select_from(table))[0][0])


def expected_scores(dataset: Path, predictions: Dict[str, Path],
                    spec: evalproto.MetricSpec) -> Dict[str, float]:
    """corpus-score --data-format dynabench, in process."""
    comparison = evalproto.score_files(
        [str(dataset)], [str(path) for path in predictions.values()], [spec],
        evalproto.Analysis(), data_format="dynabench", names=list(predictions))
    return {result.system: result.score for result in comparison.results
            if result.group is None}


def mixes(count: int) -> Dict[str, List[str]]:
    """`count` different systems: LT22 with every k-th line from Lan-Bridge."""
    first, second = lines("de-en.hyp.LT22.en"), lines("de-en.hyp.Lan-Bridge.en")
    return {f"mix-{k}": [b if i % k == 0 else a for i, (a, b) in enumerate(zip(first, second))]
            for k in range(2, 2 + count)}


def test_a_server_killed_during_a_job_finishes_it_after_a_restart(database, start_server,
                                                                   tmp_path):
    gate = tmp_path / "gate"
    evaluator = tmp_path / "gated_evaluator.py"
    evaluator.write_text(GATED_EVALUATOR)
    command = f"{sys.executable} {evaluator} {gate}"
    server = start_server(database)
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": "bleu"}, {"spec": command, "kind": "command"}]})
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    rows = dataset_rows()
    big = [dict(row, uid=f"{row['uid']}-{copy}") for copy in range(20) for row in rows]
    dataset = jsonl(tmp_path / "big.jsonl", big)  # 3,000 segments
    server.ok("POST", "/api/tasks/mt/datasets/big", content=dataset.read_bytes())
    hyps = lines("de-en.hyp.LT22.en")
    predictions = jsonl(tmp_path / "lt22.jsonl", [
        {"id": row["uid"], "pred": hyps[int(row["uid"].split("-")[0][1:]) - 1]}
        for row in big])
    gate.touch()
    server.ok("POST", "/api/tasks/mt/datasets/big/models/lt22", token,
              content=predictions.read_bytes())
    until(lambda: Path(f"{gate}.reached").exists(), "the command's job to start")
    workers = server.children()
    assert workers
    server.kill()
    for worker in workers:  # the workers end with their server
        assert_ends(worker)
    (running,) = query(server.url, select(schema.jobs).where(schema.jobs.c.state == "running"))
    assert count(server.url, schema.evaluations) <= 1  # the command's rows are not there
    gate.unlink()  # the job now runs as fast as the command answers

    again = start_server(server.url)
    again.wait("mt")
    states = query(again.url, select(schema.jobs.c.id, schema.jobs.c.state,
                                     schema.jobs.c.attempts))
    assert sorted(state for _, state, _ in states) == ["done", "done"]
    assert {job: attempts for job, _, attempts in states}[running.id] == 0  # not its doing
    assert count(again.url, schema.evaluations) == 2  # one per metric, none twice
    entries = {entry["metric"]: entry for entry in again.leaderboard("mt")}
    for spec in (evalproto.MetricSpec("in-process", "bleu"),
                 evalproto.MetricSpec("command", command)):
        assert entries[spec.spec]["score"] == expected_scores(
            dataset, {"lt22": predictions}, spec)["lt22"]
        assert entries[spec.spec]["n"] == 3000
    assert again.stop() == 0
    until(lambda: not running_commands(str(evaluator)), "every evaluator process to end")


def test_twenty_submissions_at_once_are_all_there_and_right(database, start_server,
                                                             tmp_path):
    server = start_server(database, "--jobs", "2")
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": "bleu"}, {"spec": "chrf"}]})
    tokens = [server.ok("POST", "/api/teams", json={"name": team})["token"]
              for team in ("lab-a", "lab-b")]
    dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows())
    server.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset.read_bytes())
    systems = mixes(20)
    files = {model: jsonl(tmp_path / f"{model}.jsonl", prediction_rows(hyps))
             for model, hyps in systems.items()}
    answers: Dict[str, Any] = {}
    barrier = threading.Barrier(len(files))

    def submit(number: int, model: str) -> None:
        barrier.wait()
        answers[model] = server.request(
            "POST", f"/api/tasks/mt/datasets/ds/models/{model}", tokens[number % 2],
            content=files[model].read_bytes())

    threads = [threading.Thread(target=submit, args=(number, model))
               for number, model in enumerate(files)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {model: answer.status_code for model, answer in answers.items()} == {
        model: 201 for model in files}
    server.wait("mt")
    assert count(server.url, schema.submissions) == 20
    assert count(server.url, schema.evaluations) == 40
    entries = server.leaderboard("mt")
    for metric in ("bleu", "chrf"):
        shown = {entry["model"]: entry["score"] for entry in entries
                 if entry["metric"] == metric}
        assert shown == expected_scores(dataset, files,
                                        evalproto.MetricSpec("in-process", metric))


def test_a_resubmission_replaces_its_entry_and_the_earlier_stays(database, start_service,
                                                                  tmp_path):
    server = start_service(database)
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [{"spec": "bleu"}]})
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows())
    server.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset.read_bytes())
    first = jsonl(tmp_path / "first.jsonl", prediction_rows(lines("de-en.hyp.LT22.en")))
    second = jsonl(tmp_path / "second.jsonl",
                   prediction_rows(lines("de-en.hyp.Lan-Bridge.en")))
    scores = expected_scores(dataset, {"first": first, "second": second},
                             evalproto.MetricSpec("in-process", "bleu"))
    submitted = []
    for path in (first, second, first):
        submitted.append(server.ok("POST", "/api/tasks/mt/datasets/ds/models/m", token,
                                   content=path.read_bytes())["submission"])
        server.wait("mt")
        (entry,) = server.leaderboard("mt")
        assert entry["submission"] == submitted[-1]
        assert entry["score"] == scores[path.stem]
    history = server.ok("GET", "/api/tasks/mt/models/m")["submissions"]
    assert [record["submission"] for record in history] == submitted
    assert [record["scores"][0]["score"] for record in history] == [
        scores["first"], scores["second"], scores["first"]]
    earlier = server.ok("GET", f"/api/submissions/{submitted[1]}")
    assert earlier["scores"][0]["score"] == scores["second"]
    assert count(server.url, schema.evaluations) == 2  # the first file was scored once


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_job_that_fails_says_why_and_the_server_goes_on(database, start_service, tmp_path):
    """A metric command that dies: its job fails with the evaluator's message; the
    other metric's figures are on the board."""
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nfor line in sys.stdin:\n"
                     "    if line.startswith('SCORE'):\n        sys.exit(3)\n"
                     "    print('ERROR unknown command', flush=True)\n")
    server = start_service(database)
    command = f"{sys.executable} {dying}"
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": "bleu"}, {"spec": command, "kind": "command"}]})
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows())
    server.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset.read_bytes())
    server.ok("POST", "/api/tasks/mt/datasets/ds/models/m", token, content=jsonl(
        tmp_path / "p.jsonl", prediction_rows(lines("de-en.hyp.LT22.en"))).read_bytes())
    server.wait("mt")
    entries = {entry["metric"]: entry for entry in server.leaderboard("mt")}
    assert entries["bleu"]["status"] == "done"
    assert entries[command]["status"] == "failed"
    assert "exit" in entries[command]["message"] and "3" in entries[command]["message"]
    text = server.board("leaderboard", "mt").stdout
    assert f"m, {command}: failed: " in text
    assert server.ok("GET", "/api/tasks/mt/jobs") == {"queued": 0, "running": 0, "done": 1,
                                                      "failed": 1}


KILLING_EVALUATOR = textwrap.dedent("""
    import os, signal, sys
    mode, marker = sys.argv[1], sys.argv[2]
    for line in sys.stdin:
        command, *fields = [field.strip() for field in line.split("|||")]
        if command == "SCORE":
            with open(f"/proc/{os.getppid()}/cmdline", "rb") as stream:
                in_a_worker = b"spawn_main" in stream.read()
            if in_a_worker and (mode == "always" or not os.path.exists(marker)):
                with open(marker, "a") as stream:
                    stream.write("killed\\n")
                os.kill(os.getppid(), signal.SIGKILL)  # the worker process running the job
                sys.exit(0)
            reply = f"1 {len(fields[0].split())} {len(fields[-1].split())}"
        elif command == "EVAL":
            reply = repr(sum(float(number) for number in fields[0].split()))
        else:
            reply = "ERROR unknown command"
        print(reply, flush=True)
""")


def _workers_of(server: Any) -> List[int]:
    """The server's pool processes (not its resource tracker), oldest first."""
    found = []
    for pid in server.children():
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except FileNotFoundError:
            continue
    return sorted(found)


def _board(server: Any, tmp_path: Path, metrics: List[Dict[str, str]]) -> str:
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": metrics})
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows()[:40])
    server.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset.read_bytes())
    return str(token)


def _submit(server: Any, tmp_path: Path, token: str, model: str, system: str) -> None:
    predictions = jsonl(tmp_path / f"{model}.jsonl", prediction_rows(lines(system)[:40]))
    server.ok("POST", f"/api/tasks/mt/datasets/ds/models/{model}", token,
              content=predictions.read_bytes())


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_dead_leaderboard_process_is_replaced(database, start_server, tmp_path):
    """The leaderboards' processes (started after the one job worker) killed: the next
    leaderboard is computed by new ones, not refused."""
    server = start_server(database)
    token = _board(server, tmp_path, [{"spec": "bleu"}])
    _submit(server, tmp_path, token, "m1", "de-en.hyp.LT22.en")
    server.wait("mt")
    assert [entry["status"] for entry in server.leaderboard("mt")] == ["done"]
    job_worker, *figures = until(lambda: (lambda found: found if len(found) > 1 else None)(
        _workers_of(server)), "the server's workers")
    for pid in figures:
        os.kill(pid, signal.SIGKILL)
    _submit(server, tmp_path, token, "m2", "de-en.hyp.Lan-Bridge.en")
    server.wait("mt")
    response = server.request("GET", "/api/tasks/mt/leaderboard")
    assert response.status_code == 200, response.text
    entries = [entry for section in response.json()["datasets"] for entry in section["entries"]]
    assert sorted((entry["model"], entry["status"]) for entry in entries) == [
        ("m1", "done"), ("m2", "done")]
    assert job_worker in _workers_of(server)
    assert len(_workers_of(server)) == 1 + len(figures)  # new ones, kept alive
    assert "Traceback" not in server.text()


def _gated_beside_a_killer(database, start_server, tmp_path, kills):
    """`evalproto serve --jobs 2` with two evaluator commands: one that waits while its
    gate file is there, one that kills its worker (`kills`: once, always), each kill
    noted in a marker file; a model submitted. (server, the two specs, gate, marker)."""
    gate, marker = tmp_path / "gate", tmp_path / "killed"
    gated, killing = tmp_path / "gated.py", tmp_path / "killing.py"
    gated.write_text(GATED_EVALUATOR)
    killing.write_text(KILLING_EVALUATOR)
    gate.touch()
    server = start_server(database, "--jobs", "2")
    slow = f"{sys.executable} {gated} {gate}"
    killer = f"{sys.executable} {killing} {kills} {marker}"
    token = _board(server, tmp_path, [{"spec": slow, "kind": "command"},
                                      {"spec": killer, "kind": "command"}])
    _submit(server, tmp_path, token, "m1", "de-en.hyp.LT22.en")
    return server, slow, killer, gate, marker


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_job_beside_one_whose_worker_died_is_run_again(database, start_server, tmp_path):
    """Two jobs in flight; one kills its worker process (once): the other, cut off with
    it, is queued again and scored, and so is the one that killed it."""
    server, slow, killer, gate, marker = _gated_beside_a_killer(
        database, start_server, tmp_path, "once")
    until(marker.exists, "the worker to be killed")
    gate.unlink()
    server.wait("mt")
    entries = {entry["metric"]: entry for entry in server.leaderboard("mt")}
    assert entries[slow]["status"] == "done", entries[slow]
    assert entries[killer]["status"] == "done", entries[killer]
    assert marker.read_text() == "killed\n"


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_job_that_kills_every_worker_ends_failed(database, start_server, tmp_path):
    marker = tmp_path / "killed"
    killing = tmp_path / "killing.py"
    killing.write_text(KILLING_EVALUATOR)
    server = start_server(database)
    killer = f"{sys.executable} {killing} always {marker}"
    token = _board(server, tmp_path, [{"spec": "bleu"}, {"spec": killer, "kind": "command"}])
    _submit(server, tmp_path, token, "m1", "de-en.hyp.LT22.en")
    server.wait("mt")
    entries = {entry["metric"]: entry for entry in server.leaderboard("mt")}
    assert entries["bleu"]["status"] == "done"
    assert entries[killer]["status"] == "failed"
    assert "died on each of its 3 attempts" in entries[killer]["message"]
    assert marker.read_text() == "killed\n" * 3


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_only_the_job_that_kills_its_worker_is_charged(database, start_server, tmp_path):
    """--jobs 2: a job cut off three times by a job beside it that kills its worker each
    time was failed with it ("died on each of its 3 attempts"); it is queued again
    without a charge, and scored once the other has failed."""
    server, slow, killer, gate, marker = _gated_beside_a_killer(
        database, start_server, tmp_path, "always")
    until(lambda: marker.exists() and marker.read_text() == "killed\n" * 3,
          "the killer's third kill")
    until(lambda: server.ok("GET", "/api/tasks/mt/jobs")["failed"] == 1, "the killer to fail")
    gate.unlink()
    server.wait("mt")
    entries = {entry["metric"]: entry for entry in server.leaderboard("mt")}
    assert entries[slow]["status"] == "done", entries[slow]
    assert entries[killer]["status"] == "failed"
    assert "died on each of its 3 attempts" in entries[killer]["message"]
    charged = dict(query(database, select(schema.metrics.c.spec, schema.jobs.c.attempts).join(
        schema.metrics, schema.metrics.c.id == schema.jobs.c.metric_id)))
    assert charged == {slow: 0, killer: 3}


def test_a_job_the_database_fails_after_its_claim_is_not_left_running(database,
                                                                      monkeypatch):
    """The database fails between a job's claim and its start: the job is queued again
    (and fails, saying why, once that has happened on each of its attempts)."""
    from sqlalchemy.exc import OperationalError

    from evalproto.service import jobs

    engine = db.open_engine(db.database_url(database))
    try:
        db.migrate(engine)
        with db.writing(engine) as connection:
            store.add_task(connection, "mt", [store.MetricEntry(
                "bleu", "in-process", "BLEU", "nrefs:1|bleu", True)], "bleu")
            task = store.task(connection, "mt")
            store.add_dataset(connection, task.id, "ds", None, b'{"id": "a", "answer": "x"}\n',
                              1, 1)
            store.add_team(connection, "lab-a", "0" * 64)
            team = store.team_by_token(connection, "0" * 64)
            dataset = store.dataset(connection, task.id, "ds")
            store.submit(connection, task.id, team.id, "m", dataset.id,
                         b'{"id": "a", "pred": "x"}\n')

        def failing(connection: Any, predictions_id: int) -> bytes:
            raise OperationalError("SELECT predictions", {}, Exception("connection lost"))

        monkeypatch.setattr(results, "predictions_data", failing)

        class NoWorkers:
            capacity = 1

        dispatcher = jobs.Dispatcher(engine, NoWorkers())  # type: ignore[arg-type]
        for attempt in range(1, jobs.MAX_DEATHS + 1):
            with pytest.raises(OperationalError):
                dispatcher._take_jobs()
            ((state, attempts, message),) = query(database, select(
                schema.jobs.c.state, schema.jobs.c.attempts, schema.jobs.c.message))
            assert attempts == attempt
            if attempt < jobs.MAX_DEATHS:
                assert (state, message) == ("queued", None)
        assert state == "failed"
        assert message == ("it could not be sent to a worker on 3 attempts "
                           "(OperationalError (Exception: connection lost))"), message
    finally:
        engine.dispose()


def test_predictions_an_evaluator_command_cannot_take_are_refused(database, start_service,
                                                                 tmp_path):
    """A "|||" in a prediction would put the evaluator protocol out of step: refused at
    submission when the task has an evaluator command (its job would fail). (A line
    break is read as a space, and a lone surrogate is not JSON to the reader.)"""
    evaluator = tmp_path / "evaluator.py"
    evaluator.write_text(GATED_EVALUATOR)
    server = start_service(database)
    command = f"{sys.executable} {evaluator} {tmp_path / 'no-gate'}"
    token = _board(server, tmp_path, [{"spec": "bleu"}, {"spec": command, "kind": "command"}])
    hyps = lines("de-en.hyp.LT22.en")[:40]
    for bad, said in (("a ||| b", "'|||'"), ("a|||b", "'|||'"), ("|||", "'|||'")):
        rows = prediction_rows(hyps)
        rows[3]["pred"] = bad
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
        response = server.request("POST", "/api/tasks/mt/datasets/ds/models/m", token,
                                  content=data)
        assert response.status_code == 400, (bad, response.text)
        message = response.json()["error"]
        assert message.startswith(f"m.jsonl: the prediction for id {rows[3]['id']!r} cannot "
                                  f"be scored by the task's evaluator command"), message
        assert said in message
    assert server.ok("GET", "/api/tasks/mt/jobs")["queued"] == 0
    assert count(server.url, schema.submissions) == 0


CRASHING_EVALUATOR = textwrap.dedent("""
    import sys
    for line in sys.stdin:
        command, *fields = [field.strip() for field in line.split("|||")]
        if command == "SCORE":
            if "CRASH" in fields[-1]:
                sys.exit(3)
            reply = f"1 {len(fields[0].split())} {len(fields[-1].split())}"
        elif command == "EVAL":
            reply = repr(sum(float(number) for number in fields[0].split()))
        else:
            reply = "ERROR unknown command"
        print(reply, flush=True)
""")


def test_an_export_leaves_out_a_model_whose_scoring_failed(database, start_service, tmp_path):
    evaluator = tmp_path / "crashing.py"
    evaluator.write_text(CRASHING_EVALUATOR)
    server = start_service(database)
    command = f"{sys.executable} {evaluator}"
    token = _board(server, tmp_path, [{"spec": command, "kind": "command"}])
    _submit(server, tmp_path, token, "m1", "de-en.hyp.LT22.en")
    crashing = tmp_path / "crashing.en"
    crashing.write_text("CRASH\n" + "\n".join(lines("de-en.hyp.Lan-Bridge.en")[1:]) + "\n")
    predictions = jsonl(tmp_path / "m2.jsonl", prediction_rows(lines(str(crashing))[:40]))
    server.ok("POST", "/api/tasks/mt/datasets/ds/models/m2", token,
              content=predictions.read_bytes())
    server.wait("mt")
    assert server.ok("GET", "/api/tasks/mt/jobs")["failed"] == 1
    plan = server.ok("GET", "/api/tasks/mt/datasets/ds/stats")
    assert plan == {"models": ["m1"], "metrics": [command], "left_out": [],
                    "failed_models": ["m2"]}
    assert server.request("GET", "/api/tasks/mt/datasets/ds/stats/m1").status_code == 200
    response = until(lambda: (lambda found: found if found.status_code != 202 else None)(
        server.request("GET", "/tasks/mt/datasets/ds/report")), "the report to be made")
    assert response.status_code == 200, response.text
    result = server.board("export", "mt", "ds", "-o", str(tmp_path / "export"))
    assert result.exit_code == 0, result.output
    assert "Left out, their scoring failed: m2." in result.output


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_leaderboard_wait_gives_up_after_its_timeout(database, start_service, tmp_path):
    gate = tmp_path / "gate"
    gate.touch()
    evaluator = tmp_path / "gated.py"
    evaluator.write_text(GATED_EVALUATOR)
    server = start_service(database)
    command = f"{sys.executable} {evaluator} {gate}"
    token = _board(server, tmp_path, [{"spec": command, "kind": "command"}])
    _submit(server, tmp_path, token, "m1", "de-en.hyp.LT22.en")
    until((tmp_path / "gate.reached").exists, "the job to start")
    result = server.board("leaderboard", "mt", "--wait", "--wait-timeout", "0.5")
    assert result.exit_code == 1, result.output
    assert "the jobs of 'mt' did not end within 0.5 s (0 queued, 1 running)" in result.output
    gate.unlink()
    result = server.board("leaderboard", "mt", "--wait", "--wait-timeout", "120")
    assert result.exit_code == 0, result.output
    assert "m1" in result.output
    result = server.board("leaderboard", "mt", "--wait-timeout", "5")
    assert result.exit_code == 2 and "--wait-timeout goes with --wait" in result.output


STUCK_EVALUATOR = textwrap.dedent("""
    import subprocess, sys, time
    mark = sys.argv[1]
    for line in sys.stdin:
        command, *fields = [field.strip() for field in line.split("|||")]
        if command == "SCORE":  # stuck in its first request, a child of its own beside it
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", mark])
            open(mark, "w").close()
            time.sleep(600)
        print("ERROR unknown command", flush=True)
""")


@pytest.mark.parametrize("stop", ["SIGTERM", "kill -9"])
def test_a_stopped_or_killed_server_leaves_no_evaluator_behind(start_server, tmp_path, stop):
    """An evaluator command still at work when its server stopped (SIGTERM: exit 0) or
    died (kill -9: its workers die with it) ran on under PID 1, with what it started:
    each evaluator's process group now ends with the process that started it."""
    mark = tmp_path / f"stuck-{os.getpid()}-{stop.replace(' ', '')}"
    evaluator = tmp_path / "stuck_evaluator.py"
    evaluator.write_text(STUCK_EVALUATOR)
    server = start_server(f"sqlite:///{tmp_path / 'board.db'}", "--jobs", "2")
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": "bleu"}, {"spec": f"{sys.executable} {evaluator} {mark}", "kind": "command"}]})
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows()[:30])
    server.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset.read_bytes())
    predictions = jsonl(tmp_path / "p.jsonl", prediction_rows(lines("de-en.hyp.LT22.en")[:30]))
    server.ok("POST", "/api/tasks/mt/datasets/ds/models/m", token,
              content=predictions.read_bytes())
    until(mark.exists, "the evaluator command to be at work")
    stuck = running_commands(str(mark))  # the worker's evaluator, its child, the server's
    assert len(stuck) == 3, stuck
    if stop == "SIGTERM":
        assert server.stop() == 0, server.text()
    else:
        server.kill()
    for pid in stuck:
        assert_ends(pid)
    until(lambda: not running_commands(str(mark)), "every process of the evaluator's group")
