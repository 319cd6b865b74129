"""Perturbed datasets and the Dynaboard in the service: a copy's rows name the
original's (refused otherwise), the original's board gains the copy's delta metric
(Dynabench's: the copies' predictions against the model's own on the original, in
percent), and the Dynaboard gives each model Dynabench's Dynascore over the board's
figures, with a seeded 95% bootstrap interval, under the user's weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import evalproto

from .conftest import jsonl
from .test_service_models import model_file, nli_rows


def copies_of(rows: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    """A perturbed copy as `evalproto perturb` writes one: rows that a transform changed,
    each with its input_id; some examples have two copies, some one, some none."""
    found = []
    for number, row in enumerate(rows):
        for transform in (["Upper", "Typos"] if number % 3 == 0 else
                          ["Upper"] if number % 3 == 1 else []):
            text = (row["hypothesis"].upper() if transform == "Upper"
                    else row["hypothesis"].replace("e", "3") + " x y z")
            found.append(dict(row, uid=f"{row['uid']}_{transform}", input_id=row["uid"],
                              hypothesis=text))
    return found


def predictions(rows: List[Dict[str, Any]], rule: int) -> List[Dict[str, str]]:
    """A team's predictions: its label by the words of the hypothesis, against `rule`."""
    return [{"id": row["uid"], "pred": "entailment" if len(row["hypothesis"].split()) < rule
             else "neutral"} for row in rows]


def delta_by_hand(rows, copies, original_preds, copy_preds) -> float:
    """Dynabench's get_unperturbed_percent: for each example with copies, the share of
    them predicted as the model predicted the example, averaged over those examples."""
    said = {pred["id"]: pred["pred"] for pred in original_preds}
    on_copy = {pred["id"]: pred["pred"] for pred in copy_preds}
    shares = []
    for row in rows:
        mine = [copy for copy in copies if copy["input_id"] == row["uid"]]
        if mine:
            shares.append(100 * sum(on_copy[copy["uid"]] == said[row["uid"]] for copy in mine)
                          / len(mine))
    return sum(shares) / len(shares)


@pytest.fixture
def board(start_service, tmp_path):
    """The board of `fill_board` on a new service."""
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}", jobs=2)
    return (server, *fill_board(server, tmp_path))


def fill_board(server: Any, tmp_path: Path) -> Tuple[Any, ...]:
    """Task nli (submissions only: exact match and chrF), dataset dev with a robustness
    and a fairness copy, three teams' models submitted on all three; scored when this
    returns. The dataset's rows, the copies by kind, the files by model and dataset."""
    server.ok("POST", "/api/tasks", json={"name": "nli", "metrics": [
        {"spec": "exact-match"}, {"spec": "chrf"}], "perf": "exact-match"})
    rows = nli_rows(0, 90)
    server.ok("POST", "/api/tasks/nli/datasets/dev",
              content=jsonl(tmp_path / "dev.jsonl", rows).read_bytes())
    copies = {kind: copies_of(rows, kind) for kind in ("robustness", "fairness")}
    copies["fairness"] = copies["fairness"][::2]
    for kind, found in copies.items():
        server.ok("POST", f"/api/tasks/nli/datasets/dev-{kind}", params={
            "perturbation_of": "dev", "kind": kind},
            content=jsonl(tmp_path / f"dev-{kind}.jsonl", found).read_bytes())
    files: Dict[str, Dict[str, Any]] = {}
    for number, (team, rule) in enumerate((("lab-a", 14), ("lab-b", 18), ("lab-c", 25))):
        token = server.ok("POST", "/api/teams", json={"name": team})["token"]
        model = f"model-{number}"
        files[model] = {"dev": predictions(rows, rule)}
        for name, found in (("dev", rows), *((f"dev-{kind}", copies[kind])
                                            for kind in copies)):
            made = predictions(found, rule)
            files[model][name] = made
            server.ok("POST", f"/api/tasks/nli/datasets/{name}/models/{model}", token,
                      content=jsonl(tmp_path / f"{model}-{name}.jsonl", made).read_bytes())
    server.wait("nli")
    return rows, copies, files


def test_the_originals_board_gains_the_delta_metrics_of_its_copies(board):
    server, rows, copies, files = board
    found = {(entry["model"], entry["metric"]): entry
             for entry in server.leaderboard("nli", "dev")}
    for model, made in files.items():
        for kind in ("robustness", "fairness"):
            expected = delta_by_hand(rows, copies[kind], made["dev"], made[f"dev-{kind}"])
            assert found[model, kind]["score"] == pytest.approx(expected, abs=1e-9)
            assert found[model, kind]["half_width"] is None
    board_json = server.ok("GET", "/api/tasks/nli/leaderboard", None)
    assert [metric["metric"] for metric in board_json["metrics"]] == [
        "exact-match", "chrf", "fairness", "robustness"]
    datasets = {dataset["dataset"]: dataset for dataset in server.ok(
        "GET", "/api/tasks/nli", None)["datasets"]}
    assert (datasets["dev-robustness"]["perturbation_of"],
            datasets["dev-robustness"]["kind"]) == ("dev", "robustness")
    copy_entries = server.leaderboard("nli", "dev-robustness")
    assert {entry["metric"] for entry in copy_entries} == {"exact-match", "chrf"}


def test_the_dynaboard_is_dynabenchs_dynascore_with_an_interval(board):
    server, _, _, files = board
    found = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert [metric["metric"] for metric in found["metrics"]] == [
        "exact-match", "fairness", "robustness"]
    assert {metric["metric"]: metric["weight"] for metric in found["metrics"]} == {
        "exact-match": 4.0, "fairness": 1.0, "robustness": 1.0}
    scores = {model["model"]: model["scores"] for model in found["models"]}
    expected = evalproto.dynascore(scores, {"exact-match": 4, "fairness": 1,
                                            "robustness": 1}, "exact-match")
    assert {model["model"]: model["dynascore"] for model in found["models"]} == \
        pytest.approx(expected, rel=1e-12)
    assert [model["dynascore"] for model in found["models"]] == sorted(
        expected.values(), reverse=True)
    board_entries = {(entry["model"], entry["metric"]): entry["score"]
                     for entry in server.leaderboard("nli", "dev")}
    for model in found["models"]:
        low, high = model["interval"]
        assert low <= model["dynascore"] <= high and low < high
        assert model["scores"]["exact-match"] == board_entries[model["model"], "exact-match"]
        assert model["scores"]["fairness"] == pytest.approx(
            board_entries[model["model"], "fairness"])
        shares = model["normalized"]
        assert sum(shares[name] * weight for name, weight in (
            ("exact-match", 4), ("fairness", 1), ("robustness", 1))) / 6 == pytest.approx(
            model["dynascore"])
    again = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert again == found  # seeded: the same intervals


def test_the_users_weights_and_their_refusals(board):
    server, _, _, _ = board
    only_perf = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None,
                          params={"weights": "exact-match=1"})
    for model in only_perf["models"]:  # the Dynascore of the perf metric alone is it
        assert model["dynascore"] == pytest.approx(model["scores"]["exact-match"])
    robust = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None,
                       params={"weights": "exact-match=0,robustness=5"})
    assert [model["model"] for model in robust["models"]] == [
        model["model"] for model in sorted(robust["models"],
                                           key=lambda m: -m["scores"]["robustness"])]
    for weights, said in (("memory=1", "'memory' is not a metric of this Dynaboard"),
                          ("exact-match=x", "the weight of 'exact-match' is not a number"),
                          ("exact-match=-1", "a weight is from 0 to"),
                          ("exact-match=0", "they must not all be 0"),
                          ("exact-match", "is not METRIC=WEIGHT")):
        response = server.request("GET", "/api/tasks/nli/datasets/dev/dynaboard", None,
                                  params={"weights": weights})
        assert response.status_code == 400 and said in response.json()["error"], weights
    copy = server.request("GET", "/api/tasks/nli/datasets/dev-fairness/dynaboard", None)
    assert copy.status_code == 400
    assert "is a fairness copy of 'dev': the Dynaboard is the original's" in copy.text


def test_the_board_commands_give_the_dynaboard(board):
    server, _, _, _ = board
    done = server.board("dynaboard", "nli", "dev", "--weights",
                        "exact-match=4,fairness=1,robustness=1", "-f", "json")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    api = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)["models"]
    assert lines == api
    text = server.board("dynaboard", "nli", "dev").stdout.splitlines()
    assert text[0].startswith("nli / dev: the Dynascore of 3 models (weights: exact-match 4, "
                              "fairness 1, robustness 1; 95% bootstrap intervals of 1000 "
                              "resamples)")
    assert text[1].split()[:5] == ["Rank", "Model", "Team", "Dynascore", "(95%"]
    assert server.board("dynaboard", "nli", "dev", "--weights", "x").exit_code == 1


def test_a_copy_must_copy_the_originals_rows(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    server.ok("POST", "/api/tasks", json={"name": "nli", "metrics": [{"spec": "exact-match"}]})
    rows = nli_rows(0, 12)
    server.ok("POST", "/api/tasks/nli/datasets/dev",
              content=jsonl(tmp_path / "dev.jsonl", rows).read_bytes())
    good = copies_of(rows, "robustness")
    for found, params, status, said in (
            (good[:2] + [dict(good[2], input_id="e999")], {"kind": "robustness"}, 400,
             "line 3: input_id 'e999' names no example of the original dataset"),
            ([{key: value for key, value in good[0].items() if key != "input_id"}],
             {"kind": "robustness"}, 400, "line 1: a perturbed example needs an 'input_id'"),
            (good, {"kind": "beauty"}, 400, "kind: 'beauty' is neither fairness nor "
                                             "robustness"),
            (good, {}, 400, "names both the dataset it copies (perturbation_of) and its kind"),
            (good, {"kind": "robustness", "perturbation_of": "nope"}, 404,
             "the task has no dataset 'nope'")):
        params = {"perturbation_of": "dev", **params}
        if not params.get("kind"):
            params.pop("kind", None)
        response = server.request("POST", "/api/tasks/nli/datasets/copy", params=params,
                                  content=jsonl(tmp_path / "copy.jsonl", found).read_bytes())
        assert response.status_code == status, (params, response.text)
        assert said in response.json()["error"]
    server.ok("POST", "/api/tasks/nli/datasets/copy", params={
        "perturbation_of": "dev", "kind": "robustness"},
        content=jsonl(tmp_path / "copy.jsonl", good).read_bytes())
    again = server.request("POST", "/api/tasks/nli/datasets/copy2", params={
        "perturbation_of": "dev", "kind": "robustness"},
        content=jsonl(tmp_path / "copy.jsonl", good).read_bytes())
    assert "the dataset 'dev' has a robustness copy already: 'copy'" in again.text
    nested = server.request("POST", "/api/tasks/nli/datasets/copy3", params={
        "perturbation_of": "copy", "kind": "fairness"},
        content=jsonl(tmp_path / "copy.jsonl", good).read_bytes())
    assert "the dataset 'copy' is itself a perturbed copy" in nested.text
    done = server.board("add-dataset", "nli", "x", str(tmp_path / "copy.jsonl"), "--kind",
                        "fairness")
    assert done.exit_code == 2


def test_models_the_server_runs_are_run_on_copies_and_weighed_by_speed(start_service,
                                                                      tmp_path):
    """A task whose models the server runs: a copy added later is run by every model,
    and the Dynaboard weighs throughput and memory too."""
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}", instance_memory=8)
    server.ok("POST", "/api/tasks", json={
        "name": "nli", "metrics": [{"spec": "exact-match"}], "perf": "exact-match",
        "input_keys": ["context", "hypothesis"], "output_keys": ["prob"],
        "weights": {"exact-match": 4, "throughput": 1, "memory": 1, "robustness": 2}})
    server.ok("POST", "/api/teams", json={"name": "lab-a"})
    rows = nli_rows(0, 45)
    server.ok("POST", "/api/tasks/nli/datasets/dev",
              content=jsonl(tmp_path / "dev.jsonl", rows).read_bytes())
    for name, fault in (("first", "pass"), ("second", 'example["hypothesis"] += " more"')):
        server.ok("POST", "/api/tasks/nli/models", json={
            "name": name, "team": "lab-a",
            "command": model_file(tmp_path, f"{name}.py", fault=fault)})
    added = server.ok("POST", "/api/tasks/nli/datasets/dev-robust", params={
        "perturbation_of": "dev", "kind": "robustness"},
        content=jsonl(tmp_path / "copy.jsonl", copies_of(rows, "robustness")).read_bytes())
    assert added["runs"] == 2
    server.wait("nli")
    found = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert {metric["metric"]: metric["weight"] for metric in found["metrics"]} == {
        "exact-match": 4.0, "robustness": 2.0, "throughput": 1.0, "memory": 1.0}
    memory = next(metric for metric in found["metrics"] if metric["metric"] == "memory")
    assert (memory["direction"], memory["offset"], memory["higher_is_better"]) == (
        -1.0, 8.0, False)  # `evalproto serve --instance-memory 8`
    scores = {model["model"]: model["scores"] for model in found["models"]}
    assert evalproto.dynascore(
        scores, {"exact-match": 4, "robustness": 2, "throughput": 1, "memory": 1},
        "exact-match", {"memory": -1}, {"memory": 8}) == pytest.approx(
        {model["model"]: model["dynascore"] for model in found["models"]})


def test_the_instance_memory_is_a_positive_number_of_gib():
    from click.testing import CliRunner

    from evalproto.cli.main import main

    for given in ("0", "-1", "lots"):
        done = CliRunner().invoke(main, ["serve", "--instance-memory", given])
        assert done.exit_code == 2 and "--instance-memory" in done.output, given
