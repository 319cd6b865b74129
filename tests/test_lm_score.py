"""lm-score against `lmc stats` (lmchallenge 5.2), on logs that `lmc run` produced with the
n-gram model in lm_fixture/ for all four games, a log with several users, and a log
filtered by `lmc grep`."""

import gzip
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, json_rows, read_lines, run_cli

ROOT = Path(__file__).parent.parent
MODEL = Path(__file__).parent / "lm_fixture" / "ngram_model.py"
GAMES = ["wc", "we", "ce", "wr"]


@pytest.fixture(scope="session")
def lmc():
    found = ROOT / ".venv-lmc" / "bin" / "lmc"
    assert found.exists(), "lmchallenge is not installed for the tests: run bash tests/install-lmc"
    return str(found)


@pytest.fixture(scope="session")
def logs(lmc, tmp_path_factory):
    """{name: path} of LM Challenge logs made by `lmc run` with a real (small) model."""
    work = tmp_path_factory.mktemp("lmc")
    train = work / "train.txt"
    train.write_text("\n".join(read_lines(str(DATA / "de-en.ref.A.en"))) + "\n")
    text = "\n".join(read_lines(str(DATA / "de-en.ref.B.en"))[:12]) + "\n"
    # lmc 5.2 reads the user from "user" (its format document says "userId")
    users = "".join(json.dumps({"user": f"user{i // 5}", "timestamp": i, "text": line}) + "\n"
                    for i, line in enumerate(read_lines(str(DATA / "de-en.hyp.LT22.en"))[:15]))
    vocabulary = work / "vocab.txt"
    vocabulary.write_text("\n".join(sorted({word for line in read_lines(str(train))
                                            for word in line.split() if word.isalpha()})) + "\n")
    model = f"{sys.executable} {MODEL} {train}"
    runs = {"wc": (model, ["wc"], text), "we": (model, ["we"], text),
            "ce": (model + " --chars", ["ce"], text), "wr": (model, ["wr", str(vocabulary)], text),
            "users": (model, ["wc"], users)}
    paths = {}
    for name, (predictor, game, data) in runs.items():
        log = subprocess.run([lmc, "run", predictor, *game], input=data, capture_output=True,
                             text=True, check=True).stdout
        paths[name] = work / f"{name}.jsonl"
        paths[name].write_text(log)
    grepped = subprocess.run([lmc, "grep", "-k", "message", "$alpha", str(paths["wc"])],
                             capture_output=True, text=True, check=True).stdout
    paths["grep"] = work / "grep.jsonl"
    paths["grep"].write_text(grepped)
    assert '"select": false' in grepped
    return {name: str(path) for name, path in paths.items()}


def lmc_stats(lmc, path, human=True):
    args = [lmc, "stats", *([] if human else ["--no-human"]), path]
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def assert_same(ours, theirs, where="", ignore=("args",)):
    """Every key lmc prints is ours too, with the same value (numbers to 1e-9).
    The optimiser's `args` are its own output, not part of the contract."""
    for key, expected in theirs.items():
        if key in ignore:
            continue
        assert key in ours, f"{where}{key} is missing"
        if isinstance(expected, dict):
            assert_same(ours[key], expected, f"{where}{key}.")
        elif isinstance(expected, float):
            assert ours[key] == pytest.approx(expected, rel=1e-9, abs=1e-12), f"{where}{key}"
        else:
            assert ours[key] == expected, f"{where}{key}"


def lm_score(*args):
    result = run_cli("lm-score", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


@pytest.mark.parametrize("name", [*GAMES, "users", "grep"])
def test_human_statistics_equal_lmc_stats(lmc, logs, name):
    (ours,) = lm_score(logs[name])
    assert_same(ours, lmc_stats(lmc, logs[name]))


@pytest.mark.parametrize("name", [*GAMES, "users", "grep"])
def test_raw_statistics_equal_lmc_stats_no_human(lmc, logs, name):
    (ours,) = lm_score(logs[name], "--raw")
    theirs = lmc_stats(lmc, logs[name], human=False)
    assert_same(ours, theirs)
    assert set(ours) == set(theirs)


def test_the_reranking_fit_is_lmcs(lmc, logs):
    (ours,) = lm_score(logs["wr"], "--raw")
    theirs = lmc_stats(lmc, logs["wr"], human=False)["reranking"]
    assert ours["reranking"]["args"] == pytest.approx(theirs["args"], rel=1e-9)


def test_fixed_reranking_parameters(lmc, logs):
    fitted = lmc_stats(lmc, logs["wr"], human=False)["reranking"]
    alpha, beta = fitted["args"]["alpha"], fitted["args"]["beta"]
    (same,) = lm_score(logs["wr"], "--raw", "--rerank-params", f"{alpha!r},{beta!r}")
    assert same["reranking"]["correct"] == fitted["correct"]
    (other,) = lm_score(logs["wr"], "--raw", "--rerank-params", "0.9,-2")
    assert other["reranking"]["correct"] != fitted["correct"]
    assert other["reranking"]["base_correct"] == fitted["base_correct"]


def test_extra_keys_perplexity_and_bits(logs):
    (ours,) = lm_score(logs["we"])
    entropy = ours["entropy"]
    assert entropy["perplexity"] == pytest.approx(math.exp(entropy["mean"]), rel=1e-12)
    assert entropy["bits_per_token"] == pytest.approx(entropy["mean"] / math.log(2), rel=1e-12)
    assert entropy["bits_per_character"] > 0


def test_one_row_per_user_equals_lmc_on_that_users_events(lmc, logs, tmp_path):
    rows = lm_score(logs["users"], "--by", "user")
    assert [row.get("user") for row in rows] == [None, "user0", "user1", "user2"]
    lines = Path(logs["users"]).read_text().splitlines()
    for row in rows[1:]:
        own = tmp_path / f"{row['user']}.jsonl"
        own.write_text("".join(line + "\n" for line in lines
                               if json.loads(line)["user"] == row["user"]))
        assert_same(row, lmc_stats(lmc, str(own)), ignore=("log",))


def test_several_logs_gzip_and_stdin(lmc, logs, tmp_path):
    packed = tmp_path / "we.jsonl.gz"
    packed.write_bytes(gzip.compress(Path(logs["we"]).read_bytes()))
    result = run_cli("lm-score", str(packed), "-", logs["ce"], "-f", "json",
                     input=Path(logs["wc"]).read_text())
    first, second, third = json_rows(result.output)
    assert first["log"] == str(packed) and second["log"] == "-"
    assert_same(first, lmc_stats(lmc, logs["we"]), ignore=("log",))
    assert_same(second, lmc_stats(lmc, logs["wc"]), ignore=("log",))
    assert_same(third, lmc_stats(lmc, logs["ce"]))


def test_text_output_lists_the_statistics(logs):
    result = run_cli("lm-score", logs["we"])
    assert result.exit_code == 0
    assert result.output.startswith(logs["we"] + "\n")
    assert "  entropy.mean: " in result.output and "  entropy.perplexity: " in result.output


@pytest.mark.parametrize("content, message", [
    ('{"target": "a", "user": null}\nnot json\n', "line 2: not JSON"),
    ('{"user": null}\n', "line 1: expected an LM Challenge event"),
    ("", "no events"),
    ('{"target": "a", "select": false}\n', "every event is unselected"),
])
def test_bad_logs_are_named(tmp_path, content, message):
    log = tmp_path / "bad.jsonl"
    log.write_text(content)
    result = run_cli("lm-score", str(log))
    assert result.exit_code == 1
    assert str(log) in result.output and message in result.output


def test_bad_rerank_params_are_a_usage_error(logs):
    result = run_cli("lm-score", logs["wr"], "--rerank-params", "0.5")
    assert result.exit_code == 2 and "expected two numbers ALPHA,BETA" in result.output


def test_the_model_fixture_is_a_real_model():
    """Guard against a degenerate fixture: it must rank and normalise sensibly."""
    assert shutil.which(sys.executable)
    completed = subprocess.run(
        [sys.executable, str(MODEL), str(DATA / "de-en.ref.A.en")],
        input="predict\tThe \npredict\tThe \tthe\tzzzz\n", capture_output=True, text=True)
    first, second = completed.stdout.splitlines()
    scores = [float(value) for value in first.split("\t")[1::2]]
    assert len(scores) == 10 and scores == sorted(scores, reverse=True) and scores[0] < 0
    assert second.split("\t")[0] == "the" and len(second.split("\t")) == 2
