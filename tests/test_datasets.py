"""Dynabench-style datasets and Open-Assistant exports through corpus-score."""

import gzip
import json

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, json_rows, read_lines, run_cli
from sacrebleu.metrics import BLEU as SacreBLEU


def write_jsonl(path, rows, compress=False):
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return str(path)


@pytest.fixture
def dynabench(tmp_path):
    """A dataset of real sentences with tags, and shuffled predictions for it."""
    refs_a, refs_b = (read_lines(p)[:40] for p in DE_EN_REFS)
    hyps = read_lines(DE_EN_HYP)[:40]
    dataset = [{"uid" if i % 2 else "id": f"ex{i}", "answer": [a, b] if i % 3 else a,
                "tags": ["short"] if len(a) < 80 else ["long"] + (["odd"] if i % 2 else [])}
               for i, (a, b) in enumerate(zip(refs_a, refs_b))]
    predictions = [{"id": f"ex{i}", "pred": hyp} for i, hyp in enumerate(hyps)][::-1]
    return (write_jsonl(tmp_path / "dataset.jsonl", dataset),
            write_jsonl(tmp_path / "predictions.jsonl", predictions), dataset, hyps)


def test_a_dynabench_dataset_scores_with_per_tag_rows(dynabench):
    dataset_path, predictions_path, dataset, hyps = dynabench
    result = run_cli("corpus-score", "--data-format", "dynabench", dataset_path,
                     predictions_path, "-f", "json")
    assert result.exit_code == 0, result.output
    corpus, *groups = json_rows(result.output)
    assert corpus["signature"].startswith("nrefs:var|")
    # sacrebleu with a missing second reference (None) where an example has one answer
    refs_a = [row["answer"] if isinstance(row["answer"], str) else row["answer"][0]
              for row in dataset]
    refs_b = [None if isinstance(row["answer"], str) else row["answer"][1] for row in dataset]
    expected = SacreBLEU().corpus_score(hyps, [refs_a, refs_b]).score
    assert corpus["score"] == pytest.approx(expected, abs=1e-9)
    tags = {row["group"]: row["n"] for row in groups}
    assert tags == {tag: sum(tag in row["tags"] for row in dataset) for tag in tags}
    assert set(tags) == {"short", "long", "odd"}


def test_a_custom_reference_field(tmp_path):
    dataset = write_jsonl(tmp_path / "d.jsonl",
                          [{"id": 1, "label": "yes"}, {"id": 2, "label": "no"}])
    predictions = write_jsonl(tmp_path / "p.jsonl",
                              [{"id": 1, "answer": "yes"}, {"id": 2, "answer": "yes"}])
    result = run_cli("corpus-score", "--data-format", "dynabench", "--ref-field", "label",
                     "--hyp-field", "answer", dataset, predictions, "-m", "exact-match",
                     "-f", "json")
    assert json_rows(result.output)[0]["score"] == 50.0


@pytest.mark.parametrize("dataset_rows, prediction_rows, message", [
    ([{"id": "a", "answer": "x"}], [{"id": "a", "pred": "x"}, {"id": "b", "pred": "y"}],
     "p.jsonl: prediction for id 'b', which is not in the dataset"),
    ([{"id": "a", "answer": "x"}, {"id": "b", "answer": "y"}], [{"id": "a", "pred": "x"}],
     "p.jsonl: no prediction for id 'b'"),
    ([{"id": "a", "answer": "x"}], [{"id": "a", "pred": "x"}, {"id": "a", "pred": "y"}],
     "p.jsonl: line 2: duplicate prediction for id 'a'"),
    ([{"id": "a", "answer": "x"}, {"uid": "a", "answer": "y"}], [{"id": "a", "pred": "x"}],
     "d.jsonl: line 2: duplicate example id 'a'"),
    ([{"id": "a", "text": "x"}], [{"id": "a", "pred": "x"}], "d.jsonl: line 1: no 'answer' field"),
    ([{"answer": "x"}], [{"id": "a", "pred": "x"}], "d.jsonl: line 1: an example needs a 'uid'"),
    ([{"id": "a", "answer": "x"}], [{"id": "a", "pred": 3}],
     "p.jsonl: line 1: expected a string in 'pred'"),
    ([{"id": {"x": 1}, "answer": "x"}], [{"id": "a", "pred": "x"}],
     "d.jsonl: line 1: an id must be a string or a whole number, found dict"),
    ([{"id": "a", "answer": "x"}], [{"id": [1], "pred": "x"}],
     "p.jsonl: line 1: an id must be a string or a whole number, found list"),
    ([{"id": "a", "answer": "x", "tags": "t"}], [{"id": "a", "pred": "x"}],
     "d.jsonl: line 1: 'tags' must be a list of strings"),
])
def test_dataset_errors_name_the_id_or_line(tmp_path, dataset_rows, prediction_rows, message):
    dataset = write_jsonl(tmp_path / "d.jsonl", dataset_rows)
    predictions = write_jsonl(tmp_path / "p.jsonl", prediction_rows)
    result = run_cli("corpus-score", "--data-format", "dynabench", dataset, predictions)
    assert result.exit_code == 1
    assert message in result.output


def assistant(message_id, text, lang, replies=()):
    return {"message_id": message_id, "role": "assistant", "text": text, "lang": lang,
            "replies": list(replies)}


def prompter(message_id, text, lang, replies=()):
    return {"message_id": message_id, "role": "prompter", "text": text, "lang": lang,
            "replies": list(replies)}


EXPORT_MESSAGES = [prompter("p1", "What is BLEU?", "en"),
                   assistant("a1", "BLEU compares n-grams\nwith references.", "en"),
                   prompter("p2", "Was ist chrF?", "de"),
                   assistant("a2", "chrF vergleicht Zeichen-n-Gramme.", "de"),
                   assistant("a3", "Ein F-Maß über Zeichen.", "de")]
PREDICTIONS = [{"id": "a1", "pred": "BLEU compares n-grams with references."},
               {"id": "a2", "pred": "chrF vergleicht Zeichen."},
               {"id": "a3", "pred": "Ein F-Maß über Zeichen."}]


@pytest.mark.parametrize("shape", ["message", "thread", "tree"])
def test_an_open_assistant_export_scores_by_language(tmp_path, shape):
    if shape == "message":
        rows = [{k: v for k, v in m.items() if k != "replies"} for m in EXPORT_MESSAGES]
    elif shape == "thread":
        rows = [{"thread": EXPORT_MESSAGES[:2]}, {"thread": EXPORT_MESSAGES[2:]}]
    else:
        rows = [{"message_tree_id": "t1", "prompt": prompter("p1", "What is BLEU?", "en", [
                    assistant("a1", "BLEU compares n-grams\nwith references.", "en")])},
                {"message_tree_id": "t2", "prompt": prompter("p2", "Was ist chrF?", "de", [
                    assistant("a2", "chrF vergleicht Zeichen-n-Gramme.", "de"),
                    assistant("a3", "Ein F-Maß über Zeichen.", "de")])}]
    export = write_jsonl(tmp_path / "export.jsonl.gz", rows, compress=True)
    predictions = write_jsonl(tmp_path / "p.jsonl", PREDICTIONS)
    result = run_cli("corpus-score", "--data-format", "oasst", export, predictions,
                     "-m", "exact-match", "-f", "json")
    assert result.exit_code == 0, result.output
    corpus, en, de = json_rows(result.output)
    assert (corpus["n"], corpus["score"]) == (3, pytest.approx(200 / 3))  # newline -> space
    assert (en["group"], en["score"]) == ("en", 100.0)
    assert (de["group"], de["n"], de["score"]) == ("de", 2, 50.0)


def test_sentence_level_scores_are_labelled_by_example_id(dynabench):
    dataset_path, predictions_path, _, _ = dynabench
    rows = json_rows(run_cli("corpus-score", "--data-format", "dynabench", dataset_path,
                             predictions_path, "-sl", "-f", "json").output)
    assert [row["segment"] for row in rows[:3]] == ["ex0", "ex1", "ex2"]


def test_a_dataset_takes_one_file(dynabench):
    dataset_path, predictions_path, _, _ = dynabench
    result = run_cli("corpus-score", "--data-format", "dynabench", dataset_path, dataset_path,
                     "-i", predictions_path)
    assert result.exit_code == 2 and "takes one dataset file" in result.output


def test_datasets_are_not_partitioned_for_a_cluster(dynabench):
    dataset_path, predictions_path, _, _ = dynabench
    result = run_cli("corpus-score", "--data-format", "dynabench", dataset_path,
                     predictions_path, "--scheduler", "local:1")
    assert result.exit_code == 2
    assert "--data-format dynabench is read here, without --scheduler" in result.output


@pytest.mark.parametrize("rows, message", [
    ([{"thread": 5}], "line 1: 'thread' must be a list of message objects"),
    ([{"thread": ["hello"]}], "line 1: 'thread' must be a list of message objects"),
    ([{"prompt": "hi"}], "line 1: 'prompt' must be a message object"),
    ([{"prompt": prompter("p1", "q", "en", [assistant("a1", "x", "en")]) | {"replies": {}}}],
     "line 1: 'replies' must be a list of message objects"),
    ([{"prompt": prompter("p1", "q", "en", ["not a message"])}],
     "line 1: 'replies' must be a list of message objects"),
    ([assistant("a1", "x", 5)], "line 1: a message's 'lang' must be a string, found int"),
    ([assistant("a1", 5, "en")], "line 1: an assistant message needs a string 'message_id'"),
    ([{"thread": [[[[]]]]}], "line 1: 'thread' must be a list of message objects"),
])
def test_mistyped_or_nested_exports_are_errors_that_name_the_line(tmp_path, rows, message):
    export = write_jsonl(tmp_path / "export.jsonl", rows)
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"id": "a1", "pred": "x"}])
    result = run_cli("corpus-score", "--data-format", "oasst", export, predictions)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{export}: {message}" in result.output


def test_json_nested_deeper_than_a_parser_goes_is_an_error(tmp_path):
    export = tmp_path / "deep.jsonl"
    export.write_text('{"thread": ' + "[" * 100000 + "]" * 100000 + "}\n")
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"id": "a1", "pred": "x"}])
    result = run_cli("corpus-score", "--data-format", "oasst", str(export), predictions)
    assert result.exit_code == 1 and f"{export}: line 1: not JSON" in result.output
