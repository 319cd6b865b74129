"""The issue's sequence on a real server, on SQLite and on PostgreSQL: every leaderboard
figure is evalproto's own (corpus-score --confidence's scores and intervals, sacrebleu's
scores, the report's clusters, per-tag corpus scores), to the bit; a metric added
later scores the stored submissions with the same figures; an export reduces to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

import evalproto
from evalproto.stats.significance import rank_ranges

from .conftest import dataset_rows, jsonl, prediction_rows, systems

METRICS = ["bleu", "chrf --word-order 2"]


def make_board(server: Any, directory: Path) -> Dict[str, Any]:
    """The issue's sequence: a task, two teams, two datasets (one of two references),
    every system submitted; the files, by name."""
    assert server.board("add-task", "mt", "--metric", "bleu", "--metric",
                        "chrf --word-order 2", "--perf", "bleu").exit_code == 0
    tokens = {}
    for team in ("lab-a", "lab-b"):
        done = server.board("add-team", team)
        assert done.exit_code == 0, done.output
        tokens[team] = done.stdout.strip()
    files: Dict[str, Any] = {}
    for pair, references, name in (("de-en", ("A",), "wmt22-de-en"),
                                   ("en-de", ("A", "B"), "wmt22-en-de")):
        dataset = jsonl(directory / f"{name}.jsonl", dataset_rows(pair, references))
        done = server.board("add-dataset", "mt", name, str(dataset), "--round", "1")
        assert done.exit_code == 0, done.output
        files[name] = {"dataset": dataset, "systems": {}}
        for model, hyps in systems(pair).items():
            path = jsonl(directory / f"{name}.{model}.jsonl", prediction_rows(hyps))
            team = "lab-b" if model in ("lan-bridge", "jdexplore") else "lab-a"
            done = server.board("submit", "mt", model, name, str(path), token=tokens[team])
            assert done.exit_code == 0, done.output
            files[name]["systems"][model] = path
    files["tokens"] = tokens
    return files


def corpus_score(dataset: Path, predictions: Dict[str, Path], metric: str) -> List[Dict]:
    """`evalproto corpus-score --data-format dynabench DATASET -i ... -m METRIC -ci -f json`."""
    comparison = evalproto.score_files(
        [str(dataset)], [str(path) for path in predictions.values()],
        [evalproto.MetricSpec("in-process", metric)], evalproto.Analysis(resamples=1000),
        data_format="dynabench", names=list(predictions))
    return comparison.to_dict()


def report_ranks(dataset: Path, predictions: Dict[str, Path], metric: str) -> Dict[str, Any]:
    """The rank ranges that `evalproto report`'s clusters give."""
    corpus = evalproto.read_dataset("dynabench", [str(dataset)],
                                    [str(path) for path in predictions.values()],
                                    names=list(predictions))
    report = evalproto.report_corpus(corpus, [evalproto.MetricSpec("in-process", metric)])
    return {system: list(rank) for system, rank in
            rank_ranges(report.metric(metric).clusters).items()}


def check_parity(entries: List[Dict], files: Dict[str, Any], metrics: List[str]) -> None:
    for name in ("wmt22-de-en", "wmt22-en-de"):
        dataset, predictions = files[name]["dataset"], files[name]["systems"]
        for metric in metrics:
            expected = corpus_score(dataset, predictions, metric)
            ranks = report_ranks(dataset, predictions, metric)
            shown = {entry["model"]: entry for entry in entries
                     if entry["dataset"] == name and entry["metric"] == metric}
            assert set(shown) == set(predictions)
            for record in expected:
                entry = shown[record["system"]]
                assert entry["status"] == "done"
                if "group" in record:
                    assert entry["tags"][record["group"]] == record["score"]
                    continue
                assert entry["score"] == record["score"]
                assert entry["mean"] == record["mean"]
                assert entry["half_width"] == record["ci"]
                assert entry["n"] == record["n"]
                assert entry["signature"] == record["signature"]
            groups = {record["group"] for record in expected if "group" in record}
            for entry in shown.values():
                assert set(entry["tags"]) == groups
                assert entry["rank"] == ranks[entry["model"]]


def sacrebleu_scores(files: Dict[str, Any], name: str, model: str) -> Dict[str, float]:
    dataset = [json.loads(line) for line in files[name]["dataset"].read_text().splitlines()]
    refs = [row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
            for row in dataset]
    streams = [list(stream) for stream in zip(*refs)]
    order = {row["id"]: row["pred"] for row in
             map(json.loads, files[name]["systems"][model].read_text().splitlines())}
    hyps = [order[row["uid"]] for row in dataset]
    return {"bleu": BLEU().corpus_score(hyps, streams).score,
            "chrf --word-order 2": CHRF(word_order=2).corpus_score(hyps, streams).score,
            "ter": TER().corpus_score(hyps, streams).score}


def test_the_leaderboard_is_corpus_scores_to_the_bit(database, start_service, tmp_path):
    server = start_service(database, "--jobs", "2", jobs=2)
    files = make_board(server, tmp_path)
    done = server.board("leaderboard", "mt", "--wait", "-f", "json")
    assert done.exit_code == 0, done.output
    entries = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(entries) == (4 + 3) * len(METRICS)
    check_parity(entries, files, METRICS)
    for entry in entries:
        assert entry["score"] == sacrebleu_scores(files, entry["dataset"],
                                                  entry["model"])[entry["metric"]]
    # sorted by the perf metric, BLEU; the cluster of two close systems shares ranks
    de_en = [entry for entry in entries if entry["dataset"] == "wmt22-de-en"
             and entry["metric"] == "bleu"]
    assert [entry["score"] for entry in de_en] == sorted(
        [entry["score"] for entry in de_en], reverse=True)
    assert {tuple(entry["rank"]) for entry in de_en} != {(1, 1), (2, 2), (3, 3), (4, 4)}
    # the text shows the same board
    text = server.board("leaderboard", "mt", "wmt22-de-en").stdout
    assert text.startswith("mt / wmt22-de-en, round 1: 150 segments, ranked by BLEU\n")
    best = de_en[0]
    assert f"{best['score']:.1f} ± {best['half_width']:.1f}" in text


def test_a_metric_added_later_scores_every_stored_submission(database, start_service,
                                                             tmp_path):
    server = start_service(database)
    files = make_board(server, tmp_path)
    server.wait("mt")
    before = server.leaderboard("mt")
    done = server.board("add-metric", "mt", "ter")
    assert done.exit_code == 0, done.output
    assert "7 scoring jobs queued" in done.stdout  # every stored submission
    server.wait("mt")
    after = server.leaderboard("mt")
    check_parity(after, files, [*METRICS, "ter"])
    kept = [entry for entry in after if entry["metric"] != "ter"]
    assert kept == before  # the other metrics' figures did not move
    for entry in after:
        if entry["metric"] == "ter":
            assert entry["score"] == sacrebleu_scores(files, entry["dataset"],
                                                      entry["model"])["ter"]


def test_an_export_reduces_to_the_leaderboard(database, start_service, tmp_path):
    server = start_service(database)
    files = make_board(server, tmp_path)
    server.wait("mt")
    out = tmp_path / "export"
    done = server.board("export", "mt", "wmt22-en-de", "-o", str(out))
    assert done.exit_code == 0, done.output
    paths = sorted(str(path) for path in out.glob("*.stats"))
    assert [Path(path).stem for path in paths] == sorted(files["wmt22-en-de"]["systems"])
    reduced = evalproto.reduce_stats(paths, [], evalproto.Analysis(resamples=1000))
    shown = {(entry["model"], entry["metric"]): entry for entry in server.leaderboard(
        "mt", "wmt22-en-de")}
    records = reduced.to_dict()
    assert len(records) == len(paths) * len(METRICS)
    for record in records:
        entry = shown[record["system"], record["metric"]]
        assert (record["score"], record["mean"], record["ci"]) == (
            entry["score"], entry["mean"], entry["half_width"])
    report = evalproto.report_from_stats(paths)
    assert {system: list(rank) for system, rank in rank_ranges(
        report.metric("bleu").clusters).items()} == {
        model: entry["rank"] for (model, metric), entry in shown.items() if metric == "bleu"}


@pytest.mark.dask
@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_jobs_on_a_dask_cluster_give_the_same_figures(database, start_server, tmp_path):
    server = start_server(database, "--scheduler", "local:1")
    files = make_board(server, tmp_path)
    server.wait("mt")
    check_parity(server.leaderboard("mt"), files, METRICS)


def test_rank_ranges_are_the_places_of_each_cluster():
    assert rank_ranges([["a"], ["b", "c", "d"], ["e"]]) == {
        "a": (1, 1), "b": (2, 4), "c": (2, 4), "d": (2, 4), "e": (5, 5)}
    assert rank_ranges([["only"]]) == {"only": (1, 1)}
