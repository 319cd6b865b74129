"""The database: its migrations build exactly store.py's schema; a database made by the
first schema, with its data, is upgraded at start and serves on; servers sharing a
database take over the jobs of one that died."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, create_engine, insert, select

import evalproto
from evalproto.api.board import rows_to_bytes, score_predictions
from evalproto.service import database as db
from evalproto.service import jobstore, schema, store

from .conftest import dataset_rows, jsonl, lines, prediction_rows, until
from .test_service_jobs import GATED_EVALUATOR, expected_scores


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(db.MIGRATIONS))
    return config


def test_the_newest_migration_builds_the_schema_of_store(database):
    engine = db.open_engine(db.database_url(database))
    try:
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert db.migrate(engine) == head
        assert db.migrate(engine) == head  # a second start changes nothing
        with engine.connect() as connection:
            assert compare_metadata(MigrationContext.configure(connection),
                                    schema.metadata) == []
    finally:
        engine.dispose()


def first_schema_database(url: str, directory: Path) -> Dict[str, Any]:
    """A database of revision 0001 holding a task, a team, a dataset, a submission
    with its BLEU evaluation, and its chrF job cut off while running; written with
    the first schema's own tables (reflected from the database, not store.py's), each
    row the first of its table (id 1)."""
    engine = create_engine(url)
    rows = dataset_rows()
    dataset = jsonl(directory / "ds.jsonl", rows)
    predictions = jsonl(directory / "lt22.jsonl", prediction_rows(lines("de-en.hyp.LT22.en")))
    scored = score_predictions(evalproto.MetricSpec("in-process", "bleu"),
                               ("ds.jsonl", dataset.read_bytes()),
                               ("lt22.jsonl", predictions.read_bytes()))
    chrf = evalproto.load("chrf")
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "0001")
            tables = MetaData()
            tables.reflect(connection)
            t = tables.tables
            now = 1.0e9
            connection.execute(insert(t["tasks"]).values(name="mt", perf="bleu",
                                                         created=now))
            for spec, metric in (("bleu", evalproto.load("bleu")), ("chrf", chrf)):
                connection.execute(insert(t["metrics"]).values(
                    task_id=1, spec=spec, kind="in-process", name=metric.name,
                    signature=metric.signature, higher_is_better=True, created=now))
            connection.execute(insert(t["datasets"]).values(
                task_id=1, name="ds", round=None, content_hash=db.content_hash(
                    dataset.read_bytes()), data=dataset.read_bytes(), examples=len(rows),
                nrefs="1", created=now))
            connection.execute(insert(t["teams"]).values(
                name="lab-a", token_hash="0" * 64, created=now))
            connection.execute(insert(t["models"]).values(task_id=1, team_id=1,
                                                          name="lt22", created=now))
            connection.execute(insert(t["predictions"]).values(
                content_hash=db.content_hash(predictions.read_bytes()),
                data=predictions.read_bytes(), created=now))
            connection.execute(insert(t["submissions"]).values(
                model_id=1, dataset_id=1, predictions_id=1, created=now))
            connection.execute(insert(t["evaluations"]).values(
                dataset_id=1, predictions_id=1, signature=scored.signature,
                segments=len(rows), rows=rows_to_bytes(scored.rows), score=scored.score,
                created=now))
            connection.execute(insert(t["jobs"]), [
                {"submission_id": 1, "metric_id": 1, "state": "done", "attempts": 1,
                 "created": now, "started": now, "finished": now},
                {"submission_id": 1, "metric_id": 2, "state": "running",
                 "attempts": 1, "created": now, "started": now, "finished": None}])
    finally:
        engine.dispose()
    return {"dataset": dataset, "predictions": predictions}


def test_a_database_of_the_first_schema_is_upgraded_and_serves(database, start_server,
                                                              tmp_path):
    files = first_schema_database(database, tmp_path)
    server = start_server(database)
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert f"(schema {head})" in server.text() and head != "0001"
    server.wait("mt")  # the job cut off under the first schema runs again
    entries = {entry["metric"]: entry for entry in server.leaderboard("mt")}
    for metric in ("bleu", "chrf"):
        assert entries[metric]["status"] == "done"
        assert entries[metric]["score"] == expected_scores(
            files["dataset"], {"lt22": files["predictions"]},
            evalproto.MetricSpec("in-process", metric))["lt22"]
    token = server.ok("POST", "/api/teams", json={"name": "lab-b"})["token"]
    server.ok("POST", "/api/tasks/mt/datasets/ds/models/lan-bridge", token, content=jsonl(
        tmp_path / "lb.jsonl", prediction_rows(lines("de-en.hyp.Lan-Bridge.en"))).read_bytes())
    server.wait("mt")
    assert len(server.leaderboard("mt")) == 4


def test_a_server_takes_over_the_jobs_of_one_that_died(database, start_server, tmp_path):
    """Two servers on one database: one is killed while it runs a job, and the other,
    which lives on, queues that job again and runs it."""
    gate = tmp_path / "gate"
    evaluator = tmp_path / "gated_evaluator.py"
    evaluator.write_text(GATED_EVALUATOR)
    command_line = f"{sys.executable} {evaluator} {gate}"
    first = start_server(database)
    first.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": command_line, "kind": "command"}]})
    token = first.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    dataset = jsonl(tmp_path / "ds.jsonl", dataset_rows())
    first.ok("POST", "/api/tasks/mt/datasets/ds", content=dataset.read_bytes())
    predictions = jsonl(tmp_path / "p.jsonl", prediction_rows(lines("de-en.hyp.LT22.en")))
    gate.touch()
    first.ok("POST", "/api/tasks/mt/datasets/ds/models/lt22", token,
             content=predictions.read_bytes())
    until(lambda: Path(f"{gate}.reached").exists(), "the job to start")
    second = start_server(database)
    assert second.ok("GET", "/api/tasks/mt/jobs")["running"] == 1  # the first one's, alive
    first.kill()
    gate.unlink()
    second.wait("mt")
    (entry,) = second.leaderboard("mt")
    assert entry["status"] == "done"
    assert entry["score"] == expected_scores(
        dataset, {"lt22": predictions},
        evalproto.MetricSpec("command", command_line))["lt22"]
    engine = create_engine(database)
    try:
        with engine.connect() as connection:
            (server,) = connection.execute(select(schema.servers.c.pid)).all()
            assert server.pid == second.pid  # the dead one's registration is gone
    finally:
        engine.dispose()


@pytest.mark.parametrize("url, message", [
    ("mysql://x@y/z", "evalproto stores its data in SQLite or PostgreSQL"),
    ("sqlite://", "an in-memory SQLite database lasts one connection"),
    ("postgresql+psycopg://nobody@127.0.0.1:1/none", "cannot use the database "
                                                     "postgresql+psycopg://nobody@"),
    ("/no/such/directory/board.db", "cannot use the database sqlite:////no/such/directory"),
])
def test_a_database_that_cannot_be_used_is_one_error_line(url, message, tmp_path):
    done = subprocess.run([sys.executable, "-m", "evalproto", "serve", "--db", url,
                           "--port", "0"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and message in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def one_of_each(connection: Any) -> Tuple[int, int, Any]:
    """A task "mt" scored by BLEU, its dataset "ds" of one example, and a team "lab-a":
    the task's and dataset's ids, and the team."""
    from evalproto.service.store import MetricEntry

    store.add_task(connection, "mt", [MetricEntry(
        "bleu", "in-process", "BLEU", "bleu-signature", True)], "bleu")
    task_id = store.task(connection, "mt").id
    store.add_dataset(connection, task_id, "ds", None, b'{"id": "a", "answer": "x"}\n', 1, 1)
    store.add_team(connection, "lab-a", "0" * 64)
    return task_id, store.dataset(connection, task_id, "ds").id, \
        store.team_by_token(connection, "0" * 64)


def test_a_metric_added_while_a_submission_is_made_scores_it(database):
    """add_metric's transaction open (the metric added, not yet committed) when a
    submission comes: the submission waits for it, and is queued under the new metric
    too (without the task's row locked, each read what the other had not committed,
    and the pair was never scored)."""
    import threading

    from evalproto.service.store import MetricEntry

    engine = db.open_engine(db.database_url(database))
    try:
        db.migrate(engine)
        with db.writing(engine) as connection:
            task_id, dataset_id, team = one_of_each(connection)
        submitted = threading.Event()

        def submit() -> None:
            with db.writing(engine) as connection:
                store.submit(connection, task_id, team.id, "m", dataset_id,
                             b'{"id": "a", "pred": "x"}\n')
            submitted.set()

        with db.writing(engine) as connection:
            store.add_metric(connection, task_id, MetricEntry(
                "chrf", "in-process", "chrF2", "chrf-signature", True))
            thread = threading.Thread(target=submit)
            thread.start()
            # the submission waits for this transaction (SQLite: its write lock;
            # PostgreSQL: the task's row), however long it is held
            assert not submitted.wait(1.0)
        thread.join(timeout=120)
        assert submitted.is_set()
        with db.reading(engine) as connection:
            pairs = connection.execute(select(schema.metrics.c.spec).join(
                schema.jobs, schema.jobs.c.metric_id == schema.metrics.c.id)).scalars().all()
        assert sorted(pairs) == ["bleu", "chrf"]
    finally:
        engine.dispose()


def test_a_database_error_does_not_show_the_statements_parameters(database):
    """Errors are logged with their message: no token hash, no uploaded text in it."""
    from sqlalchemy.exc import IntegrityError

    engine = db.open_engine(db.database_url(database))
    try:
        db.migrate(engine)
        secret = "5ec7e7" * 10 + "abcd"
        with db.writing(engine) as connection:
            store.add_team(connection, "lab-a", secret)
        with pytest.raises(IntegrityError) as raised:
            with db.writing(engine) as connection:
                store.add_team(connection, "lab-b", secret)  # the same token's hash
        statement = str(raised.value).split("[SQL: ", 1)[1]  # PostgreSQL's DETAIL is before
        assert secret not in statement
        assert "hidden due to hide_parameters" in statement
    finally:
        engine.dispose()


def test_a_new_sqlite_database_is_its_owners_only(tmp_path, start_server):
    server = start_server(f"sqlite:///{tmp_path / 'board.db'}")
    server.ok("POST", "/api/teams", json={"name": "lab-a"})
    for name in ("board.db", "board.db-wal", "board.db-shm"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name


def test_a_server_taken_for_dead_ends_none_of_the_jobs_taken_over(database):
    """Server A's job is queued again (A's heart stopped) and taken by B: A's late
    finish, failure or requeue leaves it B's and running."""

    engine = db.open_engine(db.database_url(database))
    try:
        db.migrate(engine)
        with db.writing(engine) as connection:
            task_id, dataset_id, team = one_of_each(connection)
            store.submit(connection, task_id, team.id, "m", dataset_id,
                         b'{"id": "a", "pred": "x"}\n')
            for server in ("a" * 32, "b" * 32):
                jobstore.register_server(connection, server, "here", 1)
            late = jobstore.claim(connection, "a" * 32)
            assert late is not None
            assert jobstore.requeue_orphans(connection, lambda row: row.server != "a" * 32) == 1
            taken = jobstore.claim(connection, "b" * 32)
            assert taken is not None and taken.id == late.id
        for end in (lambda connection: jobstore.finish(connection, late, b"\0" * 8, 1, 1.0),
                    lambda connection: jobstore.fail(connection, late, "late"),
                    lambda connection: jobstore.requeue(connection, [late.id], "a" * 32)):
            with db.writing(engine) as connection:
                end(connection)
            with db.reading(engine) as connection:
                row = connection.execute(select(schema.jobs)).one()
            assert (row.state, row.server, row.message) == ("running", "b" * 32, None)
        with db.writing(engine) as connection:
            jobstore.fail(connection, taken, "its own")
        with db.reading(engine) as connection:
            assert connection.execute(select(schema.jobs.c.state)).scalar_one() == "failed"
    finally:
        engine.dispose()


def test_a_database_error_is_said_without_the_values_it_quotes(database):
    """PostgreSQL's messages quote stored values (DETAIL: Key (token_hash)=(...) already
    exists; invalid input syntax ... "the input"), which hide_parameters does not hide:
    what the service logs, or keeps as a job's message, names the error's kind, its
    SQLSTATE and the schema's names only."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from evalproto.service.errors import described

    engine = db.open_engine(db.database_url(database))
    secret = "f00dfeed" * 8
    try:
        db.migrate(engine)
        with db.writing(engine) as connection:
            store.add_team(connection, "lab-a", secret)
        with pytest.raises(DBAPIError) as caught:
            with db.writing(engine) as connection:
                connection.execute(insert(schema.teams).values(
                    name="lab-b", token_hash=secret, created=0.0))
        assert secret in str(caught.value.orig) or "postgresql" not in database
        said = described(caught.value)
        assert secret not in said
        assert said.startswith("IntegrityError (")
        assert "token_hash" in said
        if "postgresql" in database:
            assert "SQLSTATE 23505" in said and "constraint uq_teams_token_hash" in said
            with pytest.raises(DBAPIError) as caught:
                with db.reading(engine) as connection:
                    connection.execute(text("SELECT CAST(:value AS INTEGER)"),
                                       {"value": secret})
            assert secret in str(caught.value.orig)
            assert secret not in described(caught.value)
            assert "SQLSTATE 22P02" in described(caught.value)
    finally:
        engine.dispose()
