"""Perturbed datasets and the Dynaboard in the service: a copy's rows name the
original's (refused otherwise), the original's board gains the copy's delta metric
(Dynabench's: the copies' predictions against the model's own on the original, in
percent), and the Dynaboard gives each model Dynabench's Dynascore over the board's
figures, with a seeded 95% bootstrap interval, under the user's weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

import evalproto

from .boardpages import parse
from .conftest import jsonl, until
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


def exact_match_task(server: Any, tmp_path: Path, task: str = "nli",
                     count: int = 12) -> List[Dict[str, Any]]:
    """Task `task`, scored by exact match, with dataset dev of `count` NLI rows; its rows."""
    server.ok("POST", "/api/tasks", json={"name": task, "metrics": [{"spec": "exact-match"}]})
    rows = nli_rows(0, count)
    server.ok("POST", f"/api/tasks/{task}/datasets/dev",
              content=jsonl(tmp_path / "dev.jsonl", rows).read_bytes())
    return rows


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
    """Task nli (submissions only: exact match), dataset dev with a robustness and a
    fairness copy, three teams' models submitted on all three."""
    return fill_board(start_service(f"sqlite:///{tmp_path / 'board.db'}", jobs=2), tmp_path)


def fill_board(server, tmp_path):
    """The board of the `board` fixture, on this service."""
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
    tokens: Dict[str, str] = {}
    for number, (team, rule) in enumerate((("lab-a", 14), ("lab-b", 18), ("lab-c", 25))):
        token = server.ok("POST", "/api/teams", json={"name": team})["token"]
        model = f"model-{number}"
        tokens[model] = token
        files[model] = {"dev": predictions(rows, rule)}
        for name, found in (("dev", rows), *((f"dev-{kind}", copies[kind])
                                            for kind in copies)):
            made = predictions(found, rule)
            files[model][name] = made
            server.ok("POST", f"/api/tasks/nli/datasets/{name}/models/{model}", token,
                      content=jsonl(tmp_path / f"{model}-{name}.jsonl", made).read_bytes())
    server.wait("nli")
    return server, rows, copies, files, tokens


def test_the_originals_board_gains_the_delta_metrics_of_its_copies(board):
    server, rows, copies, files, _ = board
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
    server, _, _, files, _ = board
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
    server, _, _, _, _ = board
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
    server, _, _, _, _ = board
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
    rows = exact_match_task(server, tmp_path)
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


HOSTILE_DESCRIPTION = 'A <b onmouseover="window.__pwned = 3">bold</b> model & more'
LINK = "https://example.org/paper?a=1&b=<2>"


def test_a_team_says_what_its_model_is_at_submit_time(board, tmp_path):
    server, rows, _, _, _ = board
    token = server.ok("POST", "/api/teams", json={"name": "lab-d"})["token"]
    predicted = jsonl(tmp_path / "mine.jsonl", predictions(rows, 20))
    done = server.board("submit", "nli", "model-9", "dev", str(predicted), "--description",
                        HOSTILE_DESCRIPTION, "--url", LINK, token=token)
    assert done.exit_code == 0, done.output
    server.wait("nli")
    (section,) = server.ok("GET", "/api/tasks/nli/leaderboard", None,
                           params={"dataset": "dev"})["datasets"]
    about = {record["model"]: record for record in section["models"]}
    assert (about["model-9"]["description"], about["model-9"]["url"]) == (
        HOSTILE_DESCRIPTION, LINK)
    assert about["model-0"]["description"] is None
    page = server.request("GET", "/tasks/nli", None).text
    document = parse(page)
    (cell,) = document.xpath("//table[@id='table-dev']//tr[@data-model='model-9']/th")
    assert cell.xpath("string(span[@class='about'])") == HOSTILE_DESCRIPTION
    (link,) = cell.xpath("a[@class='paper']")
    assert (link.get("href"), link.get("rel")) == (LINK, "nofollow noopener noreferrer")
    assert "onmouseover" not in "".join(document.xpath("//@*[starts-with(name(), 'on')]"))
    assert "&lt;b onmouseover=" in page
    (date,) = document.xpath("//table[@id='table-dev']//tr[@data-model='model-9']"
                             "/td[@data-key='submitted']/time")
    assert date.get("datetime") == about["model-9"]["submitted"]
    assert date.text == about["model-9"]["submitted"][:10]
    model_page = parse(server.request("GET", "/tasks/nli/models/model-9", None).text)
    assert model_page.xpath("string(//p[@class='described']/span)") == HOSTILE_DESCRIPTION
    submissions = len(server.ok("GET", "/api/tasks/nli/models/model-9", None)["submissions"])
    for params, said in (({"url": "javascript:alert(1)"}, "give an absolute http:// or "
                                                           "https:// address"),
                         ({"url": "https://exa mple.org"}, "without spaces"),
                         ({"url": "//example.org/x"}, "give an absolute"),
                         ({"description": "two\nlines"}, "without control characters"),
                         ({"description": "x" * 501}, "501 characters; at most 500")):
        response = server.request("POST", "/api/tasks/nli/datasets/dev/models/model-9", token,
                                  params=params, content=predicted.read_bytes())
        assert response.status_code == 400 and said in response.json()["error"], params
    history = server.ok("GET", "/api/tasks/nli/models/model-9", None)
    assert len(history["submissions"]) == submissions  # nothing stored
    assert (history["description"], history["url"]) == (HOSTILE_DESCRIPTION, LINK)
    server.board("submit", "nli", "model-9", "dev", str(predicted), token=token)
    kept = server.ok("GET", "/api/tasks/nli/models/model-9", None)
    assert (kept["description"], kept["url"]) == (HOSTILE_DESCRIPTION, LINK)  # left as it is
    server.board("submit", "nli", "model-9", "dev", str(predicted), "--description", "",
                 token=token)
    removed = server.ok("GET", "/api/tasks/nli/models/model-9", None)
    assert (removed["description"], removed["url"]) == (None, LINK)


def page_dynaboard(server, query=""):
    """The dev section's Dynaboard on the task page: (its rows' models, Dynascores as
    data-value holds them, the sliders' {metric: value})."""
    def made():  # once the new scores are ranked (the page's script polls as well)
        document = parse(server.request("GET", f"/tasks/nli{query}", None).text)
        return [] if document.xpath("//p[contains(., 'The Dynaboard follows')]") else [document]

    (document,) = until(made, "the page's Dynaboard")
    rows = document.xpath("//section[@id='dataset-dev']//table[@class='dynaboard']/tbody/tr")
    sliders = {slider.get("aria-label"): slider.get("value")
               for slider in document.xpath("//input[@type='range']")}
    return ([row.get("data-dynascore-model") for row in rows],
            [float(row.xpath("string(td[@data-key='dynascore']/@data-value)")) for row in rows],
            sliders, document)


def test_the_task_page_shows_the_dynaboard_with_its_sliders(board):
    server, _, _, _, _ = board
    api = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    models, scores, sliders, document = page_dynaboard(server)
    assert models == [model["model"] for model in api["models"]]
    assert scores == [model["dynascore"] for model in api["models"]]
    assert sliders == {"exact-match": "4", "fairness": "1", "robustness": "1"}
    for slider in document.xpath("//input[@type='range']"):
        assert (slider.get("min"), slider.get("max")) == ("0", "5")
    heads = document.xpath("//table[@class='dynaboard']/thead/tr/th[@data-metric]")
    assert [(head.get("data-metric"), head.xpath("string(span[@class='better'])"))
            for head in heads] == [("exact-match", "↑"), ("fairness", "↑"), ("robustness", "↑")]
    for row, model in zip(document.xpath("//table[@class='dynaboard']/tbody/tr"),
                          api["models"]):  # what the page's script computes as it re-weighs
        shares = {cell.get("data-metric"): float(cell.get("data-share"))
                  for cell in row.xpath("td[@data-metric]")}
        assert sum(shares[name] * weight for name, weight in (
            ("exact-match", 4), ("fairness", 1), ("robustness", 1))) / 6 == pytest.approx(
            model["dynascore"], rel=1e-12)
        low, high = model["interval"]
        assert row.xpath("string(td[@data-key='interval'])") == f"{low:.2f}–{high:.2f}"
    copies = document.xpath("//section[@id='dataset-dev-robustness']")
    assert "robustness copy of dev" in copies[0].xpath("string(h2)")
    assert copies[0].xpath("h2//a/@href") == ["/tasks/nli#dataset-dev"]
    assert not copies[0].xpath(".//table[@class='dynaboard']")
    assert document.xpath("//p[@id='filter-box']/@hidden") == [""]  # the script shows it
    board_models = [row.get("data-model") for row in document.xpath(
        "//table[@id='table-dev']/tbody/tr")]
    marks = document.xpath("//section[@id='dataset-dev']//svg/g[@class='mark']")
    assert [mark.get("data-model") for mark in marks] == board_models
    for mark in marks:
        (line,) = mark.xpath("line")
        (dot,) = mark.xpath("circle")
        assert float(line.get("x1")) <= float(dot.get("cx")) <= float(line.get("x2"))


def test_the_pages_address_keeps_the_weights(board):
    server, _, _, _, _ = board
    api = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None,
                    params={"weights": "exact-match=0,robustness=5"})
    expected = [model["model"] for model in api["models"]]
    models, scores, sliders, _ = page_dynaboard(server, "?weights=exact-match=0,robustness=5")
    assert (models, scores) == (expected, [model["dynascore"] for model in api["models"]])
    assert sliders == {"exact-match": "0", "fairness": "0", "robustness": "5"}
    scripts_off = page_dynaboard(
        server, "?weight.exact-match=0&weight.fairness=0&weight.robustness=5")
    assert scripts_off[:3] == (models, scores, sliders)
    default = page_dynaboard(server)
    models, scores, sliders, document = page_dynaboard(server, "?weights=exact-match")
    assert (models, scores, sliders) == default[:3]
    assert "is not METRIC=WEIGHT; the Dynaboards show the task's weights" in \
        document.xpath("string(//p[@class='error'])")
    nothing = page_dynaboard(server, "?weights=exact-match=0")[3]
    assert "No Dynaboard: weights: they must not all be 0." in nothing.xpath(
        "string(//section[@id='dataset-dev'])")


def test_a_new_submission_on_a_copy_changes_the_dynaboard(board, tmp_path):
    """The Dynaboard is kept by what it is computed from: the predictions on the copies
    too."""
    server, rows, copies, files, tokens = board
    before = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    flipped = [dict(pred, pred="contradiction") for pred in files["model-0"]["dev-robustness"]]
    server.ok("POST", "/api/tasks/nli/datasets/dev-robustness/models/model-0",
              tokens["model-0"], content=jsonl(tmp_path / "flip.jsonl", flipped).read_bytes())
    server.wait("nli")
    after = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    scores = {model["model"]: model["scores"] for model in after["models"]}
    assert scores["model-0"]["robustness"] == pytest.approx(delta_by_hand(
        rows, copies["robustness"], files["model-0"]["dev"], flipped))
    assert scores["model-0"]["robustness"] != {
        model["model"]: model["scores"] for model in before["models"]}["model-0"]["robustness"]


def test_a_model_without_predictions_on_a_copy_is_left_out_as_on_dynabench(board, tmp_path):
    server, rows, _, _, _ = board
    before = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    token = server.ok("POST", "/api/teams", json={"name": "lab-d"})["token"]
    server.ok("POST", "/api/tasks/nli/datasets/dev/models/late", token,
              content=jsonl(tmp_path / "late.jsonl", predictions(rows, 16)).read_bytes())
    server.wait("nli")
    found = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert [metric["metric"] for metric in found["metrics"]] == [
        "exact-match", "fairness", "robustness"]  # the metrics stay
    assert found["left_out"] == [{"model": "late", "team": "lab-d",
                                  "without": ["fairness", "robustness"]}]
    assert found["models"] == before["models"]  # the others' board is as it was
    text = server.board("dynaboard", "nli", "dev").stdout
    assert text.endswith("Left out: late (lab-d), without fairness, robustness.\n")
    until(lambda: "Left out: late (lab-d), without fairness, robustness." in parse(
        server.request("GET", "/tasks/nli", None).text).xpath(
        "string(//section[@id='dataset-dev'])"), "the page's Dynaboard, once ranked")


def test_a_copy_no_model_has_predicted_yet_leaves_no_dynaboard(start_service, tmp_path):
    server = start_service(f"sqlite:///{tmp_path / 'board.db'}")
    rows = exact_match_task(server, tmp_path)
    token = server.ok("POST", "/api/teams", json={"name": "lab-a"})["token"]
    server.ok("POST", "/api/tasks/nli/datasets/dev/models/m", token,
              content=jsonl(tmp_path / "m.jsonl", predictions(rows, 16)).read_bytes())
    server.wait("nli")
    alone = server.ok("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert [model["model"] for model in alone["models"]] == ["m"]
    server.ok("POST", "/api/tasks/nli/datasets/dev-fair", params={
        "perturbation_of": "dev", "kind": "fairness"},
        content=jsonl(tmp_path / "copy.jsonl", copies_of(rows, "fairness")).read_bytes())
    response = server.request("GET", "/api/tasks/nli/datasets/dev/dynaboard", None)
    assert response.status_code == 400
    assert response.json()["error"] == ("no model of 'dev' has every metric of its Dynaboard "
                                        "yet (exact-match, fairness)")
    page = parse(server.request("GET", "/tasks/nli", None).text)
    assert "No Dynaboard: no model of 'dev' has every metric" in page.xpath(
        "string(//section[@id='dataset-dev'])")
