"""The evaluation service's speed, against a real `evalproto serve` (loopback only):

1. the leaderboard of 50 models x 2,000 segments x 2 metrics (BLEU, chrF), with
   intervals and all-pairs ranks, read from a warm server (target <= 1 s); the
   reduction behind one metric's column, alone; and a read just after a change (one
   model resubmits), which waits for the standings the server computes from the
   stored rows when its jobs settle (each metric in a worker process of its own);
2. one 2,000-segment submission scored with BLEU and chrF and on the leaderboard:
   on a task of its own, and as the 51st model of the board above (target <= 1 s);
3. a new metric (chrF) backfilled over 50 stored submissions (target <= 10 s).

Synthetic text (bench/data.py: 5-40 words a segment, each system the reference with a
share of its words replaced). Prints the median of --repeats runs of each.

    python3 bench/service.py [--repeats 5] [--jobs 2] [--postgres]

--postgres runs on a PostgreSQL server started for the run (as the tests start one:
Debian's programs, a temporary directory), instead of a SQLite file.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from data import make_systems  # noqa: E402
from service.conftest import Postgres, Server  # noqa: E402

SEGMENTS = 2000
MODELS = 50


def write_board_files(directory: Path) -> Dict[str, Any]:
    """A dataset of SEGMENTS segments (tags by length) and MODELS + REPEATS systems'
    predictions, as Dynabench JSON Lines."""
    ref, systems = make_systems(directory / "text", SEGMENTS, systems=MODELS + 12)
    refs = Path(ref).read_text().splitlines()
    dataset = directory / "dataset.jsonl"
    dataset.write_text("".join(json.dumps({"id": f"s{i}", "answer": text, "tags": [
        "long" if len(text.split()) > 20 else "short"]}) + "\n" for i, text in enumerate(refs)))
    predictions = []
    for number, path in enumerate(systems):
        hyps = Path(path).read_text().splitlines()
        target = directory / f"system{number}.jsonl"
        target.write_text("".join(json.dumps({"id": f"s{i}", "pred": text}) + "\n"
                                  for i, text in enumerate(hyps)))
        predictions.append(target.read_bytes())
    return {"dataset": dataset.read_bytes(), "predictions": predictions}


@contextmanager
def stopwatch(times: List[float]) -> Iterator[None]:
    """Append the seconds the block took to `times`."""
    start = time.perf_counter()
    yield
    times.append(time.perf_counter() - start)


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def wait(server: Server, task: str) -> None:
    while True:
        jobs = server.ok("GET", f"/api/tasks/{task}/jobs")
        if not jobs["queued"] and not jobs["running"]:
            return
        time.sleep(0.01)


def leaderboard_done(server: Server, task: str, model: str) -> bool:
    entries = server.leaderboard(task)
    return any(entry["model"] == model for entry in entries) and all(
        entry["status"] == "done" for entry in entries if entry["model"] == model)


def until_on_board(server: Server, task: str, model: str) -> None:
    while not leaderboard_done(server, task, model):
        time.sleep(0.01)


def standings_times(server: Server, metric: str, repeats: int) -> List[float]:
    """The reduction behind a leaderboard's column, alone: the stored rows of MODELS
    models reduced to scores, intervals, all-pairs ranks and tags in this process."""
    from sqlalchemy import create_engine, select

    from evalproto import MetricSpec
    from evalproto.api.board import read_upload, rows_from_bytes, standings_of
    from evalproto.service import schema

    engine = create_engine(server.url)
    with engine.connect() as connection:
        dataset = connection.execute(select(schema.datasets.c.data).where(
            schema.datasets.c.name == "ds").order_by(schema.datasets.c.id)).scalars().first()
        signature = connection.execute(select(schema.metrics.c.signature).where(
            schema.metrics.c.spec == metric)).scalars().first()
        found = connection.execute(select(schema.evaluations.c.rows).where(
            schema.evaluations.c.signature == signature).order_by(
            schema.evaluations.c.id).limit(MODELS)).scalars().all()
    engine.dispose()
    corpus = read_upload(("ds.jsonl", dataset))
    rows = {f"m{number}": rows_from_bytes(data, SEGMENTS) for number, data in enumerate(found)}
    spec = MetricSpec("in-process", metric)
    standings_of(spec, rows, corpus.ids, corpus.tags, corpus.nrefs)  # loads the metric
    return [timed(lambda: standings_of(spec, rows, corpus.ids, corpus.tags, corpus.nrefs))
            for _ in range(repeats)]


def report(name: str, times: List[float], target: float = 0.0) -> None:
    shown = ", ".join(f"{value:.3f}" for value in times)
    goal = f"  (target <= {target:g} s)" if target else ""
    print(f"{name}: median {statistics.median(times):.3f} s of [{shown}]{goal}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--postgres", action="store_true")
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="evalproto-bench-"))
    postgres = Postgres() if options.postgres else None
    url = postgres.new_database() if postgres else f"sqlite:///{directory / 'bench.db'}"
    files = write_board_files(directory)
    server = Server(url, directory, "--jobs", str(options.jobs)).start()
    try:
        run(server, files, options.repeats)
    finally:
        server.stop()
        if postgres:
            postgres.stop()


def run(server: Server, files: Dict[str, Any], repeats: int) -> None:
    print(f"evalproto serve --jobs {server.options[1]} on {server.url.split(':')[0]}; "
          f"{MODELS} models x {SEGMENTS} segments", flush=True)
    team = server.ok("POST", "/api/teams", json={"name": "lab"})["token"]
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": "bleu"}, {"spec": "chrf"}]})
    server.ok("POST", "/api/tasks/mt/datasets/ds", content=files["dataset"])
    predictions = files["predictions"]

    def submit(task: str, model: str, data: bytes) -> None:
        server.ok("POST", f"/api/tasks/{task}/datasets/ds/models/{model}", team, content=data)

    start = time.perf_counter()
    for number in range(MODELS):
        submit("mt", f"m{number}", predictions[number])
    wait(server, "mt")
    print(f"{MODELS} submissions scored with BLEU and chrF: "
          f"{time.perf_counter() - start:.1f} s", flush=True)

    # 1. the leaderboard: warm reads, and the computation after a change
    server.leaderboard("mt")
    for metric in ("bleu", "chrf"):
        report(f"1. one metric's standings of {MODELS} models, computed in process "
               f"({metric})", standings_times(server, metric, repeats))
    report("1. leaderboard, 50 models x 2 metrics, warm server",
           [timed(lambda: server.leaderboard("mt")) for _ in range(repeats)], 1.0)
    changes = []
    for number in range(repeats):  # a model resubmits: its standings change
        submit("mt", "m0", predictions[MODELS + number])
        wait(server, "mt")
        changes.append(timed(lambda: server.leaderboard("mt")))
    report("1. leaderboard read just after a change (computed, unless the server has "
           "already)", changes)

    # 2. one submission, scored and on the leaderboard
    alone = []
    for number in range(repeats):
        task = f"single-{number}"
        server.ok("POST", "/api/tasks", json={"name": task, "metrics": [
            {"spec": "bleu"}, {"spec": "chrf"}]})
        server.ok("POST", f"/api/tasks/{task}/datasets/ds", content=files["dataset"])
        with stopwatch(alone):
            submit(task, "m", predictions[MODELS + number])
            until_on_board(server, task, "m")
    report("2. one submission scored (BLEU, chrF) and on a leaderboard of its own", alone,
           1.0)
    joined = []
    for number in range(repeats):
        model = f"late-{number}"
        with stopwatch(joined):
            submit("mt", model, predictions[MODELS + 6 + number])
            until_on_board(server, "mt", model)
    report(f"2. one submission scored and on the leaderboard of {MODELS}+ models", joined,
           1.0)

    # 3. a new metric backfilled over 50 stored submissions
    backfills = []
    for number in range(repeats):
        task = f"backfill-{number}"
        server.ok("POST", "/api/tasks", json={"name": task, "metrics": [{"spec": "bleu"}]})
        server.ok("POST", f"/api/tasks/{task}/datasets/ds", content=files["dataset"])
        for model in range(MODELS):
            submit(task, f"m{model}", predictions[model])
        wait(server, task)
        server.leaderboard(task)
        with stopwatch(backfills):
            server.ok("POST", f"/api/tasks/{task}/metrics", json={"spec": "chrf"})
            wait(server, task)
    report("3. chrF backfilled over 50 stored submissions", backfills, 10.0)


if __name__ == "__main__":
    main()
