"""lm-score and lm-compare on LM Zoo predictions files (get_predictions.hdf5), with the
model's spec, unkify and tokenize outputs and the original text.

The files come from the small model of lm_fixture/zoo_model.py. Their figures are checked
against numpy and scipy computing them another way, against `evalproto lm-score` and
`lmc stats` on the `wc` and `we` logs written from the same distributions, and against
the model's own surprisal table.
"""

import doctest
import json
import math
import re
import shlex
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.stats
from conftest import json_rows, run_cli, script

import evalproto
from evalproto.readers import predictions as reader

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tests" / "lm_fixture"))
import zoo_model  # noqa: E402

COMMITTED = ROOT / "tests" / "lm_fixture" / "zoo"


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """{name: path} of the model's outputs for zoo_model.SENTENCES."""
    directory = tmp_path_factory.mktemp("zoo")
    zoo_model.write_outputs(directory)
    return {path.name.split(".")[0]: str(path) for path in directory.iterdir()}


def distributions(path):
    """[(log-probabilities as float64, token ids)] of each sentence, and the vocabulary."""
    with h5py.File(path, "r") as file:
        sentences = [(file[f"sentence/{i}/predictions"][()].astype(np.float64),
                      file[f"sentence/{i}/tokens"][()]) for i in range(len(file["sentence"]))]
        return sentences, [item.decode("utf-8") for item in file["vocabulary"][()]]


def expected(path, candidates=100, keep=None):
    """The figures computed another way: from probabilities, ranks from a sorted row.
    `keep(sentence, token)` says which tokens count. (The entropy is of the row as
    stored, whose float32 probabilities sum to 1 within 1e-7; scipy's, which normalises
    them first, is as close.)"""
    bits, ranks, entropies, characters = [], [], [], []
    sentences, vocabulary = distributions(path)
    for i, (rows, ids) in enumerate(sentences):
        for j, (row, token) in enumerate(zip(rows, ids)):
            if keep and not keep(i, j):
                continue
            probabilities = np.exp(row)
            bits.append(-math.log2(probabilities[token]))
            ranks.append(len(row) - np.searchsorted(np.sort(row), row[token], side="right") + 1)
            entropies.append(-np.sum(probabilities * np.log2(probabilities)))
            assert entropies[-1] == pytest.approx(scipy.stats.entropy(probabilities, base=2),
                                                  rel=1e-6)
            characters.append(len(vocabulary[token]))
    ranks = np.array(ranks)
    hit = ranks <= candidates
    mean_bits = float(np.mean(bits))
    return {"tokens": len(bits), "bits_per_token": mean_bits, "perplexity": 2 ** mean_bits,
            "prediction": {"hit": hit.mean(),
                           **{f"hit{n}": (hit & (ranks <= n)).mean() for n in (1, 3, 10, 20)},
                           "mrr": np.where(hit, 1 / ranks, 0).mean()},
            "predictive_entropy": float(np.mean(entropies)),
            "characters_per_token": float(np.mean(characters))}


def assert_close(ours, theirs, where=""):
    for key, value in theirs.items():
        if isinstance(value, dict):
            assert_close(ours[key], value, f"{where}{key}.")
        else:
            assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-15), f"{where}{key}"


def lm_score(*args):
    result = run_cli("lm-score", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


def test_the_figures_equal_numpy_and_scipy(zoo):
    (ours,) = lm_score(zoo["predictions"])
    assert ours["sentences"] == len(zoo_model.SENTENCES)
    assert_close(ours, expected(zoo["predictions"]))
    assert ours["signature"] == (f"lmzoo-predictions|base:e|candidates:100|vocab:116|"
                                 f"version:evalproto-{evalproto.__version__}")
    assert 0 < ours["prediction"]["hit1"] < ours["prediction"]["hit"] < 1  # not degenerate


@pytest.mark.parametrize("candidates", [5, 20, 200])
def test_tokens_ranked_beyond_the_candidates_are_misses(zoo, candidates):
    (ours,) = lm_score(zoo["predictions"], "--candidates", str(candidates))
    assert_close(ours, expected(zoo["predictions"], candidates))
    assert f"|candidates:{candidates}|" in ours["signature"]


def logs(directory, path, candidates=100, skipped=()):
    """The `wc` and `we` logs LM Challenge would write from the same distributions: the
    `candidates` likeliest tokens, ties after the token that came (so that its place is
    the number of strictly likelier tokens); logp in nats. Tokens in `skipped` (sentence,
    token) are unselected events, as `lmc grep` leaves them."""
    sentences, vocabulary = distributions(path)
    wc, we = [], []
    for i, (rows, ids) in enumerate(sentences):
        for j, (row, token) in enumerate(zip(rows, ids)):
            order = sorted(range(len(row)), key=lambda v: (-row[v], v != token))
            event = {"user": None, "character": 0, "message": i, "token": j,
                     "target": vocabulary[token],
                     **({"select": False} if (i, j) in skipped else {})}
            wc.append({**event, "completions": [[vocabulary[v] for v in order[:candidates]]]})
            we.append({**event, "logp": float(row[token])})
    paths = []
    for name, events in (("wc", wc), ("we", we)):
        paths.append(directory / f"{name}.jsonl")
        paths[-1].write_text("".join(json.dumps(event) + "\n" for event in events))
    return [str(path) for path in paths]


def lmc_stats(path):
    lmc = ROOT / ".venv-lmc" / "bin" / "lmc"
    assert lmc.exists(), "lmchallenge is not installed for the tests: run bash tests/install-lmc"
    return json.loads(subprocess.run([str(lmc), "stats", path], capture_output=True,
                                     text=True, check=True).stdout)


@pytest.mark.lmc
@pytest.mark.parametrize("candidates", [100, 5])
def test_the_figures_equal_those_of_wc_and_we_logs_of_the_same_model(zoo, tmp_path, candidates):
    wc, we = logs(tmp_path, zoo["predictions"], candidates)
    (ours,) = lm_score(zoo["predictions"], "--candidates", str(candidates))
    (of_wc,), (of_we,) = lm_score(wc), lm_score(we)
    assert_close(ours["prediction"], of_wc["prediction"])
    assert ours["bits_per_token"] == pytest.approx(of_we["entropy"]["bits_per_token"], rel=1e-12)
    assert ours["perplexity"] == pytest.approx(of_we["entropy"]["perplexity"], rel=1e-12)
    assert ours["characters_per_token"] == of_wc["characters_per_token"]
    for theirs in (lmc_stats(wc), lmc_stats(we)):  # and lmc's own figures of those logs
        assert ours["characters_per_token"] == pytest.approx(theirs["characters_per_token"])
        if "prediction" in theirs:
            assert_close(ours["prediction"], theirs["prediction"])
        else:
            assert ours["bits_per_token"] == pytest.approx(
                theirs["entropy"]["mean"] / math.log(2), rel=1e-12)


@pytest.mark.lmc
def test_skipped_unknown_tokens_are_unselected_events_of_the_logs(zoo, tmp_path):
    flags = [line.split() for line in Path(zoo["unkify"]).read_text().splitlines()]
    unknown = {(i, j) for i, line in enumerate(flags) for j, flag in enumerate(line)
               if flag == "1"}
    assert len(unknown) == 3
    wc, we = logs(tmp_path, zoo["predictions"], skipped=unknown)
    (ours,) = lm_score(zoo["predictions"], "--unkify", zoo["unkify"], "--skip-unk")
    theirs = lmc_stats(wc)
    assert_close(ours["prediction"], theirs["prediction"])
    assert ours["tokens"] == 48  # 51 tokens, 3 unknown
    assert ours["bits_per_token"] == pytest.approx(
        lmc_stats(we)["entropy"]["mean"] / math.log(2), rel=1e-12)
    assert_close(ours, expected(zoo["predictions"], keep=lambda i, j: (i, j) not in unknown))
    assert (ours["unknown"], ours["skipped"]) == (pytest.approx(3 / 51), 3)
    assert "|skip:unk|" in ours["signature"]
    (kept,) = lm_score(zoo["predictions"], "--unkify", zoo["unkify"])
    assert (kept["unknown"], kept["tokens"]) == (pytest.approx(3 / 51), 51)
    assert "skipped" not in kept and "unknown" not in lm_score(zoo["predictions"])[0]


def test_skip_first_token_leaves_out_each_sentences_first_row(zoo):
    (ours,) = lm_score(zoo["predictions"], "--skip-first-token")
    assert_close(ours, expected(zoo["predictions"], keep=lambda i, j: j > 0))
    assert (ours["sentences"], ours["skipped"]) == (4, 4)
    assert "|skip:first|" in ours["signature"]
    (both,) = lm_score(zoo["predictions"], "--skip-first-token", "--unkify", zoo["unkify"],
                       "--skip-unk")
    assert both["tokens"] == 51 - 4 - 3 and "|skip:first+unk|" in both["signature"]


def test_a_surprisal_table_of_the_same_model_gives_the_same_perplexity(zoo):
    for options in ([], ["--skip-first-token"], ["--by", "sentence"]):
        ours = lm_score(zoo["predictions"], *options)
        table = lm_score(zoo["surprisals"], *options)
        assert len(ours) == len(table)
        for predicted, surprised in zip(ours, table):
            assert predicted["tokens"] == surprised["tokens"]
            assert predicted["perplexity"] == pytest.approx(surprised["perplexity"], rel=1e-12)


@pytest.mark.parametrize("base, convert", [("2", 1 / math.log(2)), ("10", 1 / math.log(10))])
def test_other_bases(zoo, tmp_path, base, convert):
    """The same distributions stored in base 2 or 10 give the same figures; read as
    natural logarithms, they are refused."""
    sentences, vocabulary = distributions(zoo["predictions"])
    path = tmp_path / f"base{base}.hdf5"
    write(path, [(rows * convert, ids) for rows, ids in sentences], vocabulary)
    (ours,) = lm_score(str(path), "--log-base", base)
    (natural,) = lm_score(zoo["predictions"])
    assert_close({key: value for key, value in ours.items() if key != "signature"},
                  {key: value for key, value in natural.items()
                   if key not in ("log", "signature")})
    assert f"|base:{base}|" in ours["signature"]
    result = run_cli("lm-score", str(path))
    assert result.exit_code == 1
    assert (f"Error: {path}: sentence 0, token 0: not a log-probability distribution: in base e "
            f"its probabilities sum to") in result.output
    assert "is the base right (--log-base 2, e or 10)?" in result.output


def write(path, sentences, vocabulary, dtype=np.float64):
    """A predictions file of [(rows, ids)] and the vocabulary."""
    with h5py.File(path, "w") as file:
        for i, (rows, ids) in enumerate(sentences):
            file[f"sentence/{i}/predictions"] = np.asarray(rows, dtype=dtype)
            file[f"sentence/{i}/tokens"] = np.asarray(ids)
        file["vocabulary"] = np.char.encode(vocabulary, "utf-8")


def test_by_sentence_confidence_and_the_python_api(zoo):
    rows = lm_score(zoo["predictions"], "--by", "sentence", "-ci", "-cin", "200")
    assert [row.get("sentence") for row in rows] == [None, "0", "1", "2", "3"]
    assert_close(rows[2], expected(zoo["predictions"], keep=lambda i, j: i == 1))
    interval = rows[0]["confidence"]
    assert set(interval) == {"bits_per_token", "perplexity", "predictive_entropy",
                             *(f"prediction.{key}" for key in
                               ("hit", "hit1", "hit3", "hit10", "hit20", "mrr"))}
    assert 0 < interval["bits_per_token"]["ci"] < rows[0]["bits_per_token"]
    score = evalproto.lm_score(Path(zoo["predictions"]), by="sentence", confidence=200)
    assert [score.summary, *score.breakdown] == rows
    raw = evalproto.lm_score(zoo["predictions"], raw=True).summary
    assert (raw["tokens"], raw["sentences"], raw["prediction"]["hit"]) == (51, 4, 48)
    assert raw["bits"] == pytest.approx(51 * rows[0]["bits_per_token"], rel=1e-12)


def test_the_spec_names_the_model_in_the_signature_and_checks_the_vocabulary(zoo, tmp_path):
    (ours,) = lm_score(zoo["predictions"], "--spec", zoo["spec"])
    assert ours["signature"] == (f"lmzoo-predictions|base:e|candidates:100|model:tiny-bigram|"
                                 f"tokenizer:subword|vocab:116|"
                                 f"version:evalproto-{evalproto.__version__}")
    spec = json.loads(Path(zoo["spec"]).read_text())
    spec["vocabulary"]["items"].pop()
    other = tmp_path / "spec.json"
    other.write_text(json.dumps(spec))
    result = run_cli("lm-score", zoo["predictions"], "--spec", str(other))
    assert result.exit_code == 1
    assert (f"Error: {other}: the model's vocabulary has 115 items, but /vocabulary of "
            f"{zoo['predictions']} has 116: not this model's predictions?") in result.output


@pytest.mark.parametrize("change, message", [
    (lambda spec: spec.pop("name"), "the spec has no name"),
    (lambda spec: spec["tokenizer"].update(type="wordpiece"),
     "tokenizer.type is 'wordpiece'; expected one of word, subword, character"),
    (lambda spec: spec["tokenizer"].update(cased="yes"), "the spec's tokenizer.cased is not a "
                                                         "boolean"),
    (lambda spec: spec["vocabulary"].update(unk_types="<unk>"),
     "the spec's vocabulary.unk_types is not an array of strings"),
])
def test_bad_specs_are_named(zoo, tmp_path, change, message):
    spec = json.loads(Path(zoo["spec"]).read_text())
    change(spec)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    result = run_cli("lm-score", zoo["predictions"], "--spec", str(path))
    assert result.exit_code == 1 and f"Error: {path}: {message}" in result.output
    path.write_text("{not json")
    result = run_cli("lm-score", zoo["predictions"], "--spec", str(path))
    assert result.exit_code == 1 and f"Error: {path}: not an LM Zoo model spec (JSON)" in (
        result.output)


@pytest.mark.parametrize("edit, message", [
    (lambda lines: lines[:-1], "has 3 lines, but {p} has 4 sentences; expected a line of 0/1 "
                               "flags per sentence"),
    (lambda lines: [lines[0] + " 0", *lines[1:]], "line 1: 9 flags, but sentence 0 of {p} has "
                                                  "8 tokens"),
    (lambda lines: [lines[0], lines[1].replace("1", "yes"), *lines[2:]],
     "line 2: 'yes' is not a flag (0 or 1)"),
])
def test_bad_unkify_files_are_named(zoo, tmp_path, edit, message):
    path = tmp_path / "unkify.txt"
    path.write_text("\n".join(edit(Path(zoo["unkify"]).read_text().splitlines())) + "\n")
    result = run_cli("lm-score", zoo["predictions"], "--unkify", str(path))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"Error: {path}{': ' if message.startswith('line') else ' '}" \
           f"{message.format(p=zoo['predictions'])}" in result.output


def test_tokenize_output_is_checked_against_the_tokens(zoo, tmp_path):
    (checked,) = lm_score(zoo["predictions"], "--tokenize", zoo["tokenize"])
    assert checked == lm_score(zoo["predictions"])[0]
    lines = Path(zoo["tokenize"]).read_text().splitlines()
    path = tmp_path / "tokenize.txt"
    path.write_text("\n".join([lines[0], lines[1].replace("▁dog", "▁cat"), *lines[2:]]) + "\n")
    result = run_cli("lm-score", zoo["predictions"], "--tokenize", str(path))
    assert result.exit_code == 1
    assert (f"Error: {path}: line 2: the tokens differ from sentence 1 of {zoo['predictions']} "
            f"at token 2: '▁cat' here, '▁dog' there") in result.output
    path.write_text("\n".join([lines[0].rsplit(" ", 1)[0], *lines[1:]]) + "\n")
    result = run_cli("lm-score", zoo["predictions"], "--tokenize", str(path))
    assert "at token 7: the end of the line here, '</s>' there" in result.output


def test_words_sum_their_tokens_surprisals(zoo):
    rows = lm_score(zoo["predictions"], "--by", "word", "--text", zoo["sentences"],
                    "--unkify", zoo["unkify"], "--tokenize", zoo["tokenize"])
    words = rows[1:]
    texts = [sentence.split() for sentence in zoo_model.SENTENCES]
    assert [(row["sentence"], row["word"], row["text"]) for row in words] == [
        (str(i), k, word) for i, sentence in enumerate(texts) for k, word in enumerate(sentence)]
    sentences, vocabulary = distributions(zoo["predictions"])
    surprisal = [[-math.log2(math.exp(rows_[j, token])) for j, token in enumerate(ids)]
                 for rows_, ids in sentences]
    by_text = {(row["sentence"], row["text"]): row for row in words}
    # "mat" is ▁m a t (tokens 6-8 of sentence 1); "2024," ▁2 0 2 <unk> , with the unknown 4
    assert by_text["1", "mat"]["surprisal"] == pytest.approx(sum(surprisal[1][6:9]), rel=1e-12)
    assert (by_text["1", "mat"]["tokens"], by_text["1", "mat"]["unknown"]) == (3, 0)
    assert by_text["1", "2024,"]["surprisal"] == pytest.approx(sum(surprisal[1][10:15]), rel=1e-12)
    assert (by_text["1", "2024,"]["tokens"], by_text["1", "2024,"]["unknown"]) == (5, 1)
    assert (by_text["2", "✓"]["tokens"], by_text["2", "✓"]["unknown"]) == (2, 1)  # ▁ <unk>
    assert by_text["3", "日本の猫です。"]["tokens"] == 7
    # every token but <s> and </s> belongs to a word
    specials = sum(value for sentence in surprisal for value in (sentence[0], sentence[-1]))
    assert sum(row["surprisal"] for row in words) + specials == pytest.approx(
        rows[0]["bits_per_token"] * rows[0]["tokens"], rel=1e-12)
    skipping = lm_score(zoo["predictions"], "--by", "word", "--text", zoo["sentences"],
                        "--unkify", zoo["unkify"], "--skip-unk")
    skipped = {(row["sentence"], row["text"]): row for row in skipping[1:]}
    assert skipped["1", "2024,"]["surprisal"] == pytest.approx(
        sum(surprisal[1][10:13]) + surprisal[1][14], rel=1e-12)
    assert (skipped["1", "2024,"]["tokens"], skipped["1", "2024,"]["skipped"]) == (4, 1)


def test_word_text_output_and_a_word_with_every_token_left_out(tmp_path):
    sentence = "cat ✓"
    zoo_model.write_outputs(tmp_path, [sentence])
    args = [str(tmp_path / "predictions.hdf5"), "--by", "word", "--text",
            str(tmp_path / "sentences.txt"), "--unkify", str(tmp_path / "unkify.txt")]
    rows = lm_score(*args, "--skip-unk")
    assert rows[2]["text"] == "✓" and rows[2]["tokens"] == 1 and rows[2]["surprisal"] is not None
    text = run_cli("lm-score", *args)
    assert text.exit_code == 0
    assert f"{tmp_path / 'predictions.hdf5'} (sentence 0, word 1)\n  text: ✓\n  tokens: 2\n" in (
        text.output)


@pytest.mark.parametrize("change, message", [
    (lambda line: line.replace("dog", "cow"),
     "token 2 '▁dog' does not match word 1 'cow', at 'cow'"),
    (lambda line: line.replace("sat on", "saton"),
     "token 4 '▁on' opens a word inside word 2 'saton', at 'on'"),
    (lambda line: line.replace("mat in", "matin"),
     "token 9 '▁in' opens a word inside word 5 'matin', at 'in'"),
    (lambda line: line + " again", "the tokens end before the text does, at word 10 'again'"),
    (lambda line: line.rsplit(" ", 1)[0], "token 16 '▁i' comes after the end of the text, and "
                                          "is not a special token"),
])
def test_words_that_do_not_match_the_tokens_name_the_sentence(zoo, tmp_path, change, message):
    lines = Path(zoo["sentences"]).read_text().splitlines()
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join([lines[0], change(lines[1]), *lines[2:]]) + "\n")
    result = run_cli("lm-score", zoo["predictions"], "--by", "word", "--text", str(path))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (f"Error: {path}: line 2 (sentence 1 of {zoo['predictions']}): {message}"
            in result.output)


def test_word_options_that_cannot_work(zoo, tmp_path):
    result = run_cli("lm-score", zoo["predictions"], "--by", "word")
    assert result.exit_code == 2 and "--by word needs the original sentences (--text)" in (
        result.output)
    result = run_cli("lm-score", zoo["predictions"], "--text", zoo["sentences"])
    assert result.exit_code == 2 and "--text gives the sentences to find words in: it goes " \
                                     "with --by word" in result.output
    result = run_cli("lm-score", zoo["predictions"], "--skip-unk")
    assert result.exit_code == 2 and "--skip-unk needs the model's unkify output" in result.output
    result = run_cli("lm-score", zoo["predictions"], zoo["predictions"], "--spec", zoo["spec"])
    assert result.exit_code == 2 and ("--spec describe one model's predictions: give one "
                                      "predictions file with them, not 2 logs") in result.output
    result = run_cli("lm-score", zoo["surprisals"], "--unkify", zoo["unkify"])
    assert result.exit_code == 2 and (f"{zoo['surprisals']}: not an LM Zoo predictions file "
                                      f"(HDF5); --unkify apply only to those") in result.output
    result = run_cli("lm-score", zoo["surprisals"], "--by", "word")
    assert result.exit_code == 1 and "cannot break down by word; this kind of table has " \
                                     "sentence" in result.output
    result = run_cli("lm-score", zoo["predictions"], "--by", "user")
    assert result.exit_code == 1 and "cannot break down by user" in result.output
    result = run_cli("lm-score", zoo["predictions"], "--log-base", "3")
    assert result.exit_code == 2 and "'3' is not one of '2', 'e', '10'" in result.output
    lines = Path(zoo["sentences"]).read_text()
    short = tmp_path / "short.txt"
    short.write_text(lines.split("\n", 1)[1])
    result = run_cli("lm-score", zoo["predictions"], "--by", "word", "--text", str(short))
    assert result.exit_code == 1 and (f"Error: {short} has 3 lines, but {zoo['predictions']} has "
                                      f"4 sentences; expected a line per sentence"
                                      in result.output)


def compare(*args):
    result = run_cli("lm-compare", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return {row["metric"]: row for row in json_rows(result.output)}


def test_two_models_on_the_same_tokens_are_compared(tmp_path):
    path = tmp_path / "predictions.hdf5"
    zoo_model.write_predictions(path, zoo_model.SENTENCES * 5)
    same = compare(str(path), str(path), "-n", "200")
    assert set(same) == {"bits_per_token", "perplexity", "predictive_entropy",
                         *(f"prediction.{key}" for key in
                           ("hit", "hit1", "hit3", "hit10", "hit20", "mrr"))}
    assert all(row["delta"] == 0 and row["p_value"] == 1.0 for row in same.values())
    sentences, vocabulary = distributions(path)
    sharper = tmp_path / "sharper.hdf5"  # the same model, more sure of the tokens that came
    better = []
    for rows, ids in sentences:
        rows = rows.copy()
        rows[np.arange(len(ids)), ids] += 2.0
        better.append((rows - np.log(np.exp(rows).sum(axis=1, keepdims=True)), ids))
    write(sharper, better, vocabulary)
    for test in ("bs", "ar"):
        rows = compare(str(path), str(sharper), "--test", test, "-n", "500")
        (base,), (other,) = lm_score(str(path)), lm_score(str(sharper))
        assert rows["bits_per_token"]["baseline"] == base["bits_per_token"]
        assert rows["bits_per_token"]["log"] == other["bits_per_token"]
        assert rows["bits_per_token"]["delta"] < 0 and rows["bits_per_token"]["p_value"] < 0.05
    python = evalproto.lm_compare(str(path), str(sharper), samples=100)
    assert {row["metric"] for row in python.rows} == set(same)


def test_files_of_other_tokens_are_not_compared(zoo, tmp_path):
    sentences, vocabulary = distributions(zoo["predictions"])
    other = tmp_path / "other.hdf5"
    changed = [(rows, ids.copy()) for rows, ids in sentences]
    changed[2][1][3] = (changed[2][1][3] + 1) % len(vocabulary)
    write(other, changed, vocabulary)
    result = run_cli("lm-compare", zoo["predictions"], str(other))
    assert result.exit_code == 1
    assert (f"Error: {zoo['predictions']} and {other} hold different tokens, first in sentence "
            f"2 (token 3: '▁на' and {vocabulary[changed[2][1][3]]!r}); paired tests compare "
            f"two models on the same tokens" in result.output)
    write(other, sentences[:3], vocabulary)
    result = run_cli("lm-compare", zoo["predictions"], str(other))
    assert result.exit_code == 1
    assert (f"{zoo['predictions']} has 4 sentences, but {other} has 3: not predictions of the "
            f"same sentences") in result.output
    result = run_cli("lm-compare", zoo["predictions"], zoo["surprisals"])
    assert result.exit_code == 1
    assert (f"Error: {zoo['predictions']} is an LM Zoo predictions file and the other is not"
            in result.output)
    result = run_cli("lm-compare", zoo["surprisals"], zoo["surprisals"])
    assert result.exit_code == 1 and "or two LM Zoo predictions files (not surprisal tables)" in (
        result.output)


def edited(tmp_path, edit, name="bad.hdf5"):
    """A copy of a small predictions file, changed by `edit(file)` (an open h5py File)."""
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(3, 4))
    rows -= np.log(np.exp(rows).sum(axis=1, keepdims=True))
    path = tmp_path / name
    write(path, [(rows, [0, 1, 2]), (rows[:2], [3, 0])], ["a", "b", "c", "d"])
    with h5py.File(path, "a") as file:
        edit(file)
    return path


def replace(file, name, data):
    del file[name]
    file[name] = data


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.__delitem__("vocabulary"), "no /vocabulary dataset; expected LM Zoo's "
                                            "get_predictions.hdf5 output"),
    (lambda f: f.__delitem__("sentence"), "no /sentence group; expected LM Zoo's"),
    (lambda f: f.__delitem__("sentence/1/tokens"), "sentence 1: no /sentence/1/tokens dataset"),
    (lambda f: f.__delitem__("sentence/0/predictions"),
     "sentence 0: no /sentence/0/predictions dataset"),
    (lambda f: replace(f, "vocabulary", np.array([b"a", b"b", b"c"])),
     "sentence 0: the predictions matrix is 4 wide, but /vocabulary has 3 entries"),
    (lambda f: replace(f, "sentence/1/tokens", np.array([3, 0, 1])),
     "sentence 1: the predictions matrix has 2 rows for 3 tokens"),
    (lambda f: replace(f, "sentence/1/tokens", np.array([3, 4])),
     "sentence 1, token 1: id 4 is beyond the vocabulary (ids 0 to 3)"),
    (lambda f: replace(f, "sentence/1/tokens", np.array([3.0, 0.0])),
     "sentence 1: /sentence/1/tokens is not a list of integer token ids (a 1-D array of float64)"),
    (lambda f: replace(f, "sentence/0/predictions", np.full((3, 4), np.log(0.3))),
     "sentence 0, token 0: not a log-probability distribution: in base e its probabilities sum "
     "to 1.2, not 1 (within 0.001)"),
    (lambda f: f["sentence/1/predictions"].__setitem__((1, 2), np.nan),
     "sentence 1, token 1: the log-probabilities hold NaN"),
    (lambda f: replace(f, "sentence/1/predictions", [[-math.log(2)] * 2 + [-np.inf] * 2] * 2),
     "sentence 1, token 0: the token that came ('d') has probability 0; its surprisal is "
     "infinite"),
    (lambda f: replace(f, "sentence/1/predictions", np.zeros((2, 4), dtype=np.int64)),
     "sentence 1: the predictions are not a matrix of log-probabilities (a 2-D array of int64)"),
    (lambda f: f.move("sentence/1", "sentence/2"),
     "there is no /sentence/1, but there is a /sentence/2; sentences are numbered from 0"),
    (lambda f: f.move("sentence/1", "sentence/one"), "/sentence/one: not a sentence number"),
    (lambda f: replace(f, "vocabulary", np.arange(4)),
     "/vocabulary is not a list of strings (a 1-D array of int64)"),
    (lambda f: replace(f, "vocabulary", np.array([b"a", b"\xff", b"c", b"d"])),
     "/vocabulary entry 1 is not UTF-8: b'\\xff'"),
])
def test_bad_predictions_files_name_the_file_and_the_sentence(tmp_path, edit, message):
    path = edited(tmp_path, edit)
    result = run_cli("lm-score", str(path))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"Error: {path}: {message}"), result.output
    assert result.output.count("\n") == 1


def test_files_that_are_not_hdf5(tmp_path, zoo):
    named = tmp_path / "predictions.hdf5"
    named.write_text('{"target": "a", "logp": -1.5}\n')
    result = run_cli("lm-score", str(named))
    assert result.exit_code == 1 and result.output == (
        f"Error: {named}: not an HDF5 file (it lacks HDF5's signature); expected LM Zoo's "
        f"get_predictions.hdf5 output (/sentence/<i>/predictions, /sentence/<i>/tokens, "
        f"/vocabulary)\n")
    cut = tmp_path / "cut.hdf5"
    cut.write_bytes(Path(zoo["predictions"]).read_bytes()[:4000])
    result = run_cli("lm-score", str(cut))
    assert result.exit_code == 1 and f"Error: {cut}: cannot read it as HDF5: " in result.output
    assert "Traceback" not in result.output
    result = run_cli("lm-score", "-", input=Path(zoo["predictions"]).read_bytes())
    assert result.exit_code == 1 and ("Error: -: HDF5 data (LM Zoo predictions?) can only be "
                                      "read from an uncompressed file on disk") in result.output
    other = tmp_path / "other.h5"  # an HDF5 file of something else
    with h5py.File(other, "w") as file:
        file["weights"] = np.zeros(3)
    result = run_cli("lm-score", str(other))
    assert result.exit_code == 1 and f"Error: {other}: no /vocabulary dataset" in result.output


def test_a_sentence_without_tokens_counts_for_nothing(tmp_path):
    rows = np.log([[0.25, 0.75], [0.5, 0.5]])
    path = tmp_path / "empty.hdf5"
    write(path, [(rows, [1, 0]), (np.zeros((0, 2)), np.zeros(0, dtype=int)), (rows[:1], [0])],
          ["x", "y"])
    sentences = lm_score(str(path), "--by", "sentence")
    assert [(row.get("sentence"), row["tokens"]) for row in sentences] == [
        (None, 3), ("0", 2), ("2", 1)]
    assert sentences[0]["sentences"] == 2
    assert sentences[0]["bits_per_token"] == pytest.approx(
        -(math.log2(0.75) + math.log2(0.5) + math.log2(0.25)) / 3, rel=1e-12)
    write(path, [(np.zeros((0, 2)), np.zeros(0, dtype=int))], ["x", "y"])
    result = run_cli("lm-score", str(path))
    assert result.exit_code == 1
    assert result.output == f"Error: {path}: the predictions file has no tokens to score\n"


def test_a_file_after_a_user_block_is_recognised(tmp_path):
    path = tmp_path / "blocked"
    with h5py.File(path, "w", userblock_size=512) as file:
        file["sentence/0/predictions"] = np.log([[0.25, 0.75]])
        file["sentence/0/tokens"] = [1]
        file["vocabulary"] = [b"x", b"yy"]
    (ours,) = lm_score(str(path))
    assert ours["bits_per_token"] == pytest.approx(-math.log2(0.75), rel=1e-12)
    assert ours["characters_per_token"] == 2 and ours["prediction"]["hit1"] == 1


def test_sentences_are_read_a_block_at_a_time(zoo, monkeypatch):
    """However few rows are read at once, the figures are the same; a read never asks for
    more than BLOCK_VALUES log-probabilities."""
    whole = lm_score(zoo["predictions"], "--by", "sentence", "--raw")
    reads = []
    original = h5py.Dataset.__getitem__

    def counted(dataset, key):
        value = original(dataset, key)
        if dataset.name.endswith("/predictions"):
            reads.append(np.asarray(value).size)
        return value

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counted)
    monkeypatch.setattr(reader, "BLOCK_VALUES", 3 * 116)
    assert lm_score(zoo["predictions"], "--by", "sentence", "--raw") == whole
    assert max(reads) == 3 * 116 and len(reads) == sum(math.ceil(len(s) / 3) for s in [
        zoo_model.MODEL.tokenize(sentence) for sentence in zoo_model.SENTENCES])


def test_without_h5py_the_command_says_how_to_install_it(zoo):
    blocked = ("import sys; sys.modules['h5py'] = None; "
               "from evalproto.cli.launch import main; main()")
    completed = subprocess.run([sys.executable, "-c", blocked, "lm-score", zoo["predictions"]],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 1
    assert completed.stderr == (f"Error: {zoo['predictions']}: reading LM Zoo predictions (HDF5) "
                                f"needs h5py: pip install 'evalproto[lmzoo]'\n")


def test_the_committed_example_is_what_the_model_writes(tmp_path):
    """tests/lm_fixture/zoo (docs/lm-zoo.md's example) is regenerated, not edited."""
    zoo_model.write_outputs(tmp_path)
    for path in COMMITTED.iterdir():
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
    assert sorted(path.name for path in COMMITTED.iterdir()) == sorted(
        path.name for path in tmp_path.iterdir())
    assert (COMMITTED / "predictions.hdf5").stat().st_size < 16_000


GUIDE = ROOT / "docs" / "lm-zoo.md"


def guide_blocks(language):
    text = GUIDE.read_text(encoding="utf-8")
    return [(text.count("\n", 0, found.start()) + 1, found.group(1))
            for found in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.S | re.M)]


GUIDE_COMMANDS = [(line, *re.sub(r"\\\n\s*", "", text[2:]).partition("\n")[::2])
                  for line, text in guide_blocks("text") if text.startswith("$ ")]


@pytest.mark.slow
@pytest.mark.parametrize("line, command, shown", GUIDE_COMMANDS,
                         ids=[f"line {line}" for line, _, _ in GUIDE_COMMANDS])
def test_the_guides_commands_print_what_it_shows(line, command, shown):
    """docs/lm-zoo.md's session, as tests/test_docs_examples.py runs the other pages
    (byte for byte)."""
    words = shlex.split(command)
    completed = subprocess.run([script(words[0]), *words[1:]], cwd=ROOT, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == shown


def test_the_guides_python_session(monkeypatch):
    assert len(GUIDE_COMMANDS) >= 5
    monkeypatch.chdir(ROOT)
    ((line, text),) = guide_blocks("python")
    test = doctest.DocTestParser().get_doctest(text, {}, "lm-zoo.md", str(GUIDE), line)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=sys.stdout.write)
    assert runner.summarize(verbose=False) == (0, 5)
