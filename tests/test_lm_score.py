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

import evalproto
from evalproto.readers import lmlogs

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


@pytest.mark.slow
@pytest.mark.parametrize("name", [*GAMES, "users", "grep"])
def test_human_statistics_equal_lmc_stats(lmc, logs, name):
    (ours,) = lm_score(logs[name])
    assert_same(ours, lmc_stats(lmc, logs[name]))


@pytest.mark.slow
def test_the_python_api_gives_lmc_stats_figures(lmc, logs):
    score = evalproto.lm_score(logs["we"])
    assert_same(score.summary, lmc_stats(lmc, logs["we"]))
    (raw,) = evalproto.lm_score([Path(logs["wr"])], raw=True)  # a list gives a list
    assert_same(raw.summary, lmc_stats(lmc, logs["wr"], human=False))
    by_user = evalproto.lm_score(Path(logs["users"]), by="user")
    assert [by_user.summary, *by_user.breakdown] == lm_score(logs["users"], "--by", "user")
    comparison = evalproto.lm_compare(logs["wc"], logs["wc"], samples=100)
    assert comparison.rows and all(row["p_value"] == 1.0 for row in comparison.to_dict())


@pytest.mark.slow
@pytest.mark.parametrize("name", [*GAMES, "users", "grep"])
def test_raw_statistics_equal_lmc_stats_no_human(lmc, logs, name):
    (ours,) = lm_score(logs[name], "--raw")
    theirs = lmc_stats(lmc, logs[name], human=False)
    assert_same(ours, theirs)
    assert set(ours) == set(theirs)


@pytest.mark.slow
def test_the_reranking_fit_is_lmcs(lmc, logs):
    (ours,) = lm_score(logs["wr"], "--raw")
    theirs = lmc_stats(lmc, logs["wr"], human=False)["reranking"]
    assert ours["reranking"]["args"] == pytest.approx(theirs["args"], rel=1e-9)


@pytest.mark.slow
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


@pytest.mark.slow
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


EVENT = "not an LM Challenge event (a JSON object with a string 'target' and typed fields): "


@pytest.mark.parametrize("content, message", [
    ('{"target": "a", "user": null}\nnot json\n', "line 2: not JSON"),
    ('{"user": null}\n', f"line 1: {EVENT}Object missing required field `target`"),
    ('{"target": "a"}\n\n{"target": 5}\n', f"line 3: {EVENT}Expected `str`, got `int`"),
    ('{"target": "a", "logp": -1}\n\n{"target": "b", "logp": "-1.5"}\n',
     f"line 3: {EVENT}Expected `float | null`, got `str` - at `$.logp`"),
    ('{"target": "a", "select": false, "logp": true}\n{"target": "b", "logp": -2.5}\n',
     f"line 1: {EVENT}Expected `float | null`, got `bool` - at `$.logp`"),
    ('{"target": "b", "logp": -2.5}\n{"target": "c", "logp": ' + "9" * 400 + "}\n",
     f"line 2: {EVENT}Number out of range"),
    ('{"target": "a"}\n{"target": "b", "logp": 1e999999}\n', f"line 2: {EVENT}Number out of range"),
    ('{"target": "a", "completions": [["a"]]}\n{"target": "b", "completions": []}\n',
     f"line 2: {EVENT}Expected `array` of length >= 1 - at `$.completions`"),
    ('{"target": "a", "completions": ["a", "b"]}\n',
     f"line 1: {EVENT}Expected `array`, got `str` - at `$.completions[0]`"),
    ('{"target": "a", "completions": [["a", null]]}\n', "got `null` - at `$.completions[0][1]`"),
    # ids that lmc cannot fingerprint
    ('{"target": "a", "user": {"id": 1}}\n', f"line 1: {EVENT}Expected `bool | int | str | null`, "
     "got `object` - at `$.user`"),
    ('{"target": "a", "message": 1.5}\n', "got `float` - at `$.message`"),
    ('{"target": "a", "token": [1]}\n', "got `array` - at `$.token`"),
    # malformed reranking results
    ('{"target": "a", "results": [["a", 1.0]]}\n', "Expected `array` of length 3 - at "
     "`$.results[0]`"),
    ('{"target": "a", "results": []}\n', "Expected `array` of length >= 1 - at `$.results`"),
    ('{"target": "a", "results": [[1, 2.0, 3.0]]}\n', "Expected `str`, got `int` - at "
     "`$.results[0][0]`"),
    ('{"target": "a", "results": "a"}\n', "at `$.results`"),
    ('{"target": "a", "select": "no"}\n', "Expected `bool`, got `str` - at `$.select`"),
    ('{"target": "a", "extra": ' + '[' * 100000 + ']' * 100000 + '}\n', "line 1: "),  # deep
    ("", "no events"),
    ('{"target": "a", "select": false}\n', "every event is unselected"),
])
def test_bad_logs_are_named(tmp_path, content, message):
    log = tmp_path / "bad.jsonl"
    log.write_text(content)
    result = run_cli("lm-score", str(log))
    assert result.exit_code == 1
    assert str(log) in result.output and message in result.output
    assert "Traceback" not in result.output


def test_lines_are_counted_across_the_chunks_a_log_is_decoded_in(tmp_path, monkeypatch):
    monkeypatch.setattr(lmlogs, "_CHUNK_BYTES", 64)  # a chunk every two or three events
    log = tmp_path / "long.jsonl"
    good = '{"target": "word", "user": "u", "logp": -1.5}\n'
    log.write_text(good * 10 + "\n" + good * 10 + '{"target": "x"\n' + good)
    result = run_cli("lm-score", str(log))
    assert result.exit_code == 1 and f"{log}: line 22: not JSON" in result.output
    log.write_text(good * 10 + "\n" + good * 10)
    chunked = run_cli("lm-score", str(log), "--raw", "-f", "json")
    monkeypatch.undo()
    assert chunked.exit_code == 0
    assert chunked.output == run_cli("lm-score", str(log), "--raw", "-f", "json").output
    assert json.loads(chunked.output)["tokens"] == 20


@pytest.mark.parametrize("chunk_bytes", [64, 1 << 18])
def test_more_events_than_lines_each_get_their_row(tmp_path, monkeypatch, chunk_bytes):
    """msgspec reads two objects on one line (and lines ended by "\r" alone) as events
    of their own: the table sized by the line ends grows for them, in a first chunk or
    a later one."""
    monkeypatch.setattr(lmlogs, "_CHUNK_BYTES", chunk_bytes)
    event = '{"target": "word", "user": "u", "logp": -1.5}'
    packed, apart = tmp_path / "packed.jsonl", tmp_path / "apart.jsonl"
    packed.write_text(f"{event}\n{event}\n{event}{event}\n{event}\r{event}\n")
    apart.write_text(f"{event}\n" * 6)
    summaries = []
    for log in (packed, apart):
        result = run_cli("lm-score", str(log), "--raw", "-f", "json")
        assert result.exit_code == 0, result.output
        summaries.append({**json.loads(result.output), "log": None})
    assert summaries[0] == summaries[1] and summaries[0]["tokens"] == 6


@pytest.mark.parametrize("name, options", [
    ("grep", ["--raw"]), ("wr", ["--raw"]), ("users", ["--by", "user"]), ("we", ["-ci"])])
def test_chunks_do_not_change_the_results(logs, monkeypatch, name, options):
    """Users, messages, unselected events and the reranking fit span chunk boundaries;
    read in 300-byte chunks, the log gives the same output."""
    whole = run_cli("lm-score", logs[name], "-f", "json", *options)
    assert whole.exit_code == 0, whole.output
    monkeypatch.setattr(lmlogs, "_CHUNK_BYTES", 300)
    assert run_cli("lm-score", logs[name], "-f", "json", *options).output == whole.output


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


def test_confidence_intervals_resample_messages(logs):
    (ours,) = lm_score(logs["wc"], "--confidence", "--confidence-n", "300")
    intervals = ours["confidence"]
    assert set(intervals) >= {"prediction.mrr", "prediction.hit1", "completion.tokens"}
    assert "tokens_per_user" not in intervals  # a property of the text, not of the model
    mrr = intervals["prediction.mrr"]
    assert abs(mrr["mean"] - ours["prediction"]["mrr"]) < mrr["ci"] and 0 < mrr["ci"] < 0.2
    (again,) = lm_score(logs["wc"], "--confidence", "--confidence-n", "300")
    assert again["confidence"] == intervals  # seeded


def compare(*args):
    result = run_cli("lm-compare", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return {row["metric"]: row for row in json_rows(result.output)}


def test_a_log_compared_with_itself_is_not_significant(logs):
    for test in ("bs", "ar"):
        rows = compare(logs["wc"], logs["wc"], "--test", test, "-n", "200")
        assert rows and all(row["delta"] == 0 and row["p_value"] == 1.0 for row in rows.values())


def test_a_better_model_is_significantly_different(lmc, logs, tmp_path):
    train = tmp_path / "train.txt"  # trained on the test text itself: far better
    train.write_text("\n".join(read_lines(str(DATA / "de-en.ref.B.en"))) + "\n")
    text = "\n".join(read_lines(str(DATA / "de-en.ref.B.en"))[:12]) + "\n"
    better = tmp_path / "better.jsonl"
    better.write_text(subprocess.run([lmc, "run", f"{sys.executable} {MODEL} {train}", "wc"],
                                     input=text, capture_output=True, text=True,
                                     check=True).stdout)
    rows = compare(logs["wc"], str(better), "-n", "500")
    mrr = rows["prediction.mrr"]
    assert mrr["delta"] > 0 and mrr["p_value"] < 0.05
    (base,) = lm_score(logs["wc"])
    assert mrr["baseline"] == pytest.approx(base["prediction"]["mrr"], rel=1e-12)


def test_logs_of_different_data_are_refused(logs):
    result = run_cli("lm-compare", logs["wc"], logs["ce"])
    assert result.exit_code == 1
    assert "are not logs of the same data: their fingerprints are" in result.output


def test_logs_of_different_games_on_the_same_data_are_refused(logs):
    """wc and we logs of the same text share their fingerprint but no rate: comparing
    them used to exit 0 having compared nothing."""
    result = run_cli("lm-compare", logs["wc"], logs["we"])
    assert result.exit_code == 1
    assert (f"{logs['wc']} and {logs['we']} have no rate in common to compare: the first "
            f"reports prediction, completion, the second entropy (logs of different games?)"
            in result.output)


def test_an_overflowing_perplexity_is_infinite_in_text_and_null_in_json(tmp_path):
    log = tmp_path / "far.jsonl"
    log.write_text('{"target": "a", "logp": -800}\n{"target": "b", "logp": -900.5}\n')
    text = run_cli("lm-score", str(log))
    assert text.exit_code == 0 and "  entropy.perplexity: inf" in text.output
    result = run_cli("lm-score", str(log), "-f", "json")
    assert result.exit_code == 0 and "Infinity" not in result.output
    (row,) = [json.loads(line) for line in result.output.splitlines()]
    assert row["entropy"]["perplexity"] is None and row["entropy"]["mean"] == 850.25


def test_statistics_that_add_up_beyond_a_double_are_an_error(tmp_path):
    table = tmp_path / "surprisals.tsv"
    table.write_text("sentence_id\ttoken_id\ttoken\tsurprisal\n1\t1\ta\t1e308\n1\t2\tb\t1e308\n")
    result = run_cli("lm-score", str(table), "-f", "json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{table}: the statistic bits adds up beyond the largest number a double holds" in (
        result.output)


def test_entropy_of_different_token_sets_is_not_compared(logs, tmp_path):
    events = [json.loads(line) for line in Path(logs["we"]).read_text().splitlines()]
    scored = next(i for i, event in enumerate(events) if event["logp"] is not None)
    events[scored]["logp"] = None  # one more out-of-vocabulary token
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(event) + "\n" for event in events))
    rows = compare(logs["we"], str(other))
    assert rows["entropy"]["comparable"] is False
    assert not any(key.startswith("entropy.") for key in rows)


SURPRISALS = ("sentence_id\ttoken_id\ttoken\tsurprisal\n"
              "1\t1\tThe\t0.0\n1\t2\tcat\t4.5\n1\t3\tsat\t3.0\n"
              "2\t1\tA\t0.0\n2\t2\tdog\t6.0\n")


def test_lm_zoo_surprisals_give_bits_per_token_and_perplexity(tmp_path):
    table = tmp_path / "surprisals.tsv"
    table.write_text(SURPRISALS)
    (every,) = lm_score(str(table))
    assert (every["sentences"], every["tokens"]) == (2, 5)
    assert every["bits_per_token"] == pytest.approx(13.5 / 5, rel=1e-12)
    assert every["perplexity"] == pytest.approx(2 ** (13.5 / 5), rel=1e-12)
    (skipping,) = lm_score(str(table), "--skip-first-token")
    assert (skipping["sentences"], skipping["tokens"]) == (2, 3)
    assert skipping["bits_per_token"] == pytest.approx(4.5, rel=1e-12)
    by_sentence = lm_score(str(table), "--by", "sentence")
    assert [row.get("sentence") for row in by_sentence] == [None, "1", "2"]
    assert by_sentence[2]["bits_per_token"] == pytest.approx(3.0) and by_sentence[2]["tokens"] == 2


def test_a_bad_surprisal_row_is_named(tmp_path):
    table = tmp_path / "surprisals.tsv"
    table.write_text(SURPRISALS + "3\t1\tx\tinf\n")
    result = run_cli("lm-score", str(table))
    assert result.exit_code == 1
    assert f"{table}: line 7: surprisal 'inf' is not a non-negative finite number" in result.output


def test_surprisal_tables_have_no_users(tmp_path):
    table = tmp_path / "surprisals.tsv"
    table.write_text(SURPRISALS)
    result = run_cli("lm-score", str(table), "--by", "user")
    assert result.exit_code == 1
    assert "cannot break down by user; this kind of table has sentence" in result.output


def test_standard_input_can_be_read_only_once(logs):
    result = run_cli("lm-score", "-", "-", input=Path(logs["we"]).read_text())
    assert result.exit_code == 1 and "standard input ('-') can be read only once" in result.output


def test_workers_cannot_read_standard_input(logs):
    result = run_cli("lm-score", "-", "--scheduler", "local:1", input="")
    assert result.exit_code == 2 and "the workers read the files" in result.output
