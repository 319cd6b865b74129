"""The evaluation service under load, against a real `evalproto serve --jobs 2` on
loopback (a SQLite file, or with --postgres a PostgreSQL server started for the run):

1. a board of 50 models x 2 datasets (2,000 synthetic segments each, BLEU and chrF) and
   a robustness copy of the first (each segment copied once, each model's prediction on
   it another's) is submitted and scored;
2. the first read of each dataset's Dynaboard (50 models, with intervals: target under
   1 s once the rows are stored);
3. then --clients (20) clients read leaderboard pages (/tasks/mt), model pages
   (/tasks/mt/models/M) and Dynaboards (/api/tasks/mt/datasets/D/dynaboard, under
   weights of their own), each as fast as its answers come, while --submissions (20)
   new submissions arrive, one every --every seconds, through the API;
4. the readers stop once every new submission is scored (no job queued or running),
   and every one is then on the leaderboard (the API's, which waits for its ranks).

It checks that no request failed (every read 200, every submission 201), that every
submission was scored once (each of its jobs done at its first attempt, one evaluation
per metric), and prints the p50 and p95 latency of each kind of read (target: p95 <=
300 ms for every one). Bounded: at most --minutes for the load phase.

    python3 bench/load.py [--postgres] [--clients 20] [--submissions 20] [--every 0.5]
"""

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from data import make_systems  # noqa: E402
from service.conftest import Postgres, Server  # noqa: E402

SEGMENTS = 2000
MODELS = 50
DATASETS = ("news", "web")
TARGET_P95 = 0.300
TARGET_DYNABOARD = 1.0
WEIGHTS = {"news": ["bleu=4,robustness=1", "bleu=1,robustness=1", "bleu=0,robustness=1",
                    "bleu=3,robustness=5", None],
           "web": ["bleu=1", None]}
"""The weights the readers ask each Dynaboard for (None: the task's)."""
COPY = "news-robust"
KINDS = ("leaderboard", "model", "dynaboard")


def board_files(directory: Path, extra: int) -> Tuple[Dict[str, bytes], Dict[str, List[bytes]]]:
    """Each dataset's JSON Lines (tags by length), and MODELS + `extra` systems'
    predictions for it."""
    datasets, predictions = {}, {}
    for seed, name in enumerate(DATASETS, 4):
        ref, systems = make_systems(directory / name, SEGMENTS, MODELS + extra, seed=seed)
        refs = Path(ref).read_text().splitlines()
        datasets[name] = "".join(json.dumps({"id": f"s{i}", "answer": text, "tags": [
            "long" if len(text.split()) > 20 else "short"]}) + "\n"
            for i, text in enumerate(refs)).encode()
        predictions[name] = ["".join(json.dumps({"id": f"s{i}", "pred": text}) + "\n"
                                     for i, text in enumerate(
                                         Path(path).read_text().splitlines())).encode()
                             for path in systems]
    return datasets, predictions


def robustness_copy(dataset: bytes, predictions: List[bytes]) -> Tuple[bytes, List[bytes]]:
    """A copy of each segment of the dataset, and each model's predictions on it: the
    next model's on the original (a model that changes its mind on a perturbed input)."""
    rows = [json.loads(line) for line in dataset.decode().splitlines()]
    copy = "".join(json.dumps(dict(row, id=f"{row['id']}_copy", input_id=row["id"])) + "\n"
                   for row in rows).encode()
    texts = [[json.loads(line)["pred"] for line in found.decode().splitlines()]
             for found in predictions[:MODELS]]
    on_copy = ["".join(json.dumps({"id": f"{row['id']}_copy", "pred": text}) + "\n"
                       for row, text in zip(rows, texts[(number + 1) % MODELS])).encode()
               for number in range(MODELS)]
    return copy, on_copy


def wait(server: Server, task: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        jobs = server.ok("GET", f"/api/tasks/{task}/jobs")
        if not jobs["queued"] and not jobs["running"]:
            return
        assert time.monotonic() < deadline, f"the jobs of {task} took over {seconds} s"
        time.sleep(0.1)


class Readers:
    """`count` clients reading pages until stopped; each read's (page, seconds, status)."""

    def __init__(self, address: str, count: int, models: List[str]) -> None:
        self.address = address
        self.models = models
        self.stop = threading.Event()
        self.reads: List[Tuple[str, float, int]] = []
        self.failures: List[str] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._read, args=(number,), daemon=True)
                        for number in range(count)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _read(self, number: int) -> None:
        choose = random.Random(number)
        with httpx.Client(base_url=self.address, timeout=60) as client:
            while not self.stop.is_set():
                kind = choose.choice(KINDS)
                dataset = choose.choice(DATASETS)
                weights = choose.choice(WEIGHTS[dataset])
                path = {"leaderboard": "/tasks/mt",
                        "model": f"/tasks/mt/models/{choose.choice(self.models)}",
                        "dynaboard": f"/api/tasks/mt/datasets/{dataset}/dynaboard"}[kind]
                start = time.perf_counter()
                try:
                    response = client.get(path, params={"weights": weights}
                                          if kind == "dynaboard" and weights else None)
                    status = response.status_code
                except httpx.HTTPError as exc:
                    status, response = 0, None
                    self.failures.append(f"{path}: {type(exc).__name__}: {exc}")
                seconds = time.perf_counter() - start
                with self._lock:
                    self.reads.append((kind, seconds, status))
                if status != 200:
                    self.failures.append(f"{path}: HTTP {status}: "
                                         f"{response.text[:200] if response else ''}")


def percentile(values: List[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(server: Server, options: argparse.Namespace) -> bool:
    datasets, predictions = board_files(Path(server.directory) / "text", options.submissions)
    team = server.ok("POST", "/api/teams", json={"name": "lab"})["token"]
    server.ok("POST", "/api/tasks", json={"name": "mt", "metrics": [
        {"spec": "bleu"}, {"spec": "chrf"}]})
    for name, data in datasets.items():
        server.ok("POST", f"/api/tasks/mt/datasets/{name}", content=data)
    copy, on_copy = robustness_copy(datasets[DATASETS[0]], predictions[DATASETS[0]])
    server.ok("POST", f"/api/tasks/mt/datasets/{COPY}", params={
        "perturbation_of": DATASETS[0], "kind": "robustness"}, content=copy)
    start = time.perf_counter()
    models = [f"m{number}" for number in range(MODELS)]
    for number, model in enumerate(models):
        for name in DATASETS:
            server.ok("POST", f"/api/tasks/mt/datasets/{name}/models/{model}", team,
                      content=predictions[name][number])
        server.ok("POST", f"/api/tasks/mt/datasets/{COPY}/models/{model}", team,
                  content=on_copy[number])
    wait(server, "mt", 60 * options.minutes)
    print(f"{MODELS} models x {len(DATASETS)} datasets of {SEGMENTS} segments and a copy "
          f"scored with BLEU and chrF: {time.perf_counter() - start:.1f} s", flush=True)
    warm = time.perf_counter()
    server.request("GET", "/api/tasks/mt/leaderboard", None).raise_for_status()
    print(f"the first leaderboard (its ranks and the copy's deltas): "
          f"{time.perf_counter() - warm:.3f} s", flush=True)
    first = []
    for name in DATASETS:
        warm = time.perf_counter()
        server.request("GET", f"/api/tasks/mt/datasets/{name}/dynaboard", None
                       ).raise_for_status()
        first.append(time.perf_counter() - warm)
    print(f"the first read of each dataset's Dynaboard ({MODELS} models, with intervals): "
          f"{', '.join(f'{seconds:.3f}' for seconds in first)} s (target < "
          f"{TARGET_DYNABOARD:g} s: {'met' if max(first) < TARGET_DYNABOARD else 'NOT met'})",
          flush=True)
    warm = time.perf_counter()
    server.request("GET", "/tasks/mt", None).raise_for_status()
    print(f"the first read of the leaderboard page: {time.perf_counter() - warm:.3f} s",
          flush=True)

    readers = Readers(server.address, options.clients, models)
    submitted: List[int] = []
    refused: List[str] = []
    readers.start()
    began = time.perf_counter()
    try:
        for number in range(options.submissions):
            name = DATASETS[number % len(DATASETS)]
            response = server.request(
                "POST", f"/api/tasks/mt/datasets/{name}/models/late-{number}", team,
                content=predictions[name][MODELS + number])
            if response.status_code != 201:
                refused.append(f"submission {number}: HTTP {response.status_code}: "
                               f"{response.text[:200]}")
            else:
                submitted.append(response.json()["submission"])
            time.sleep(options.every)
        arrived = time.perf_counter() - began
        wait(server, "mt", 60 * options.minutes)
        settled = time.perf_counter() - began
        assert on_board(server, options.submissions), "a late model is not on the board"
    finally:
        readers.join()
    once = scored_once(server, submitted)

    failures = readers.failures + refused
    print(f"{options.clients} readers while {options.submissions} submissions arrived (one "
          f"every {options.every} s, over {arrived:.1f} s; all scored after {settled:.1f} s)",
          flush=True)
    p95s = {}
    for kind in KINDS:
        values = [seconds for page, seconds, _ in readers.reads if page == kind]
        p95s[kind] = percentile(values, 0.95)
        print(f"  {kind}: {len(values)} reads, p50 {statistics.median(values) * 1000:.0f} ms, "
              f"p95 {p95s[kind] * 1000:.0f} ms, max {max(values) * 1000:.0f} ms", flush=True)
    print(f"  errors: {len(failures)}; submissions scored once: {once} of "
          f"{options.submissions}", flush=True)
    for failure in failures[:10]:
        print(f"    {failure}")
    worst = max(p95s, key=lambda kind: p95s[kind])
    print(f"  the largest p95, {worst}'s: {p95s[worst] * 1000:.0f} ms (target <= "
          f"{TARGET_P95 * 1000:.0f} ms): {'met' if p95s[worst] <= TARGET_P95 else 'NOT met'}",
          flush=True)
    return not failures and once == options.submissions and len(submitted) == once


def on_board(server: Server, count: int) -> bool:
    """Whether every late model is on the leaderboard with all its figures."""
    board = server.ok("GET", "/api/tasks/mt/leaderboard")
    late = [entry for section in board["datasets"] for entry in section["entries"]
            if entry["model"].startswith("late-")]
    return len(late) == 2 * count and all(entry["status"] == "done" for entry in late)


def scored_once(server: Server, submissions: List[int]) -> int:
    """How many of these submissions had each of their jobs done at the first attempt,
    with one evaluation per metric."""
    from sqlalchemy import create_engine, func, select

    from evalproto.service import schema

    engine = create_engine(server.url)
    try:
        with engine.connect() as connection:
            good = 0
            for submission in submissions:
                jobs = connection.execute(select(schema.jobs.c.state, schema.jobs.c.attempts)
                                          .where(schema.jobs.c.submission_id == submission)
                                          ).all()
                row = connection.execute(select(schema.submissions.c.predictions_id,
                                                schema.submissions.c.dataset_id).where(
                    schema.submissions.c.id == submission)).one()
                evaluations = connection.execute(select(func.count()).where(
                    schema.evaluations.c.predictions_id == row.predictions_id,
                    schema.evaluations.c.dataset_id == row.dataset_id)).scalar_one()
                good += (len(jobs) == 2 and all(state == "done" and attempts == 0
                                                for state, attempts in jobs)
                         and evaluations == 2)
            return good
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--every", type=float, default=0.5, metavar="SECONDS")
    parser.add_argument("--minutes", type=float, default=5.0,
                        help="the longest each phase may take")
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="evalproto-load-"))
    postgres = Postgres() if options.postgres else None
    try:
        url = postgres.new_database() if postgres else f"sqlite:///{directory / 'load.db'}"
        server = Server(url, directory, "--jobs", "2").start()
        print(f"evalproto serve --jobs 2 on {url.split(':')[0]}, loopback", flush=True)
        try:
            passed = run(server, options)
        finally:
            server.stop()
    finally:
        if postgres:
            postgres.stop()
        shutil.rmtree(directory, ignore_errors=True)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
