"""`evalproto jsonl dataset|predictions`: Dynabench's files written from text files
score exactly as the text files do."""

import json

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, MULTI_REFS, json_rows, read_lines, run_cli


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


def test_files_written_from_text_score_as_the_text_does(tmp_path):
    tags = write(tmp_path, "tags", [("long" if len(line.split()) > 20 else "short")
                                    + (",fourth" if number % 4 == 0 else "")
                                    for number, line in enumerate(read_lines(DE_EN_REFS[0]))])
    dataset, predictions = str(tmp_path / "de-en.jsonl"), str(tmp_path / "lt22.jsonl")
    done = run_cli("jsonl", "dataset", *DE_EN_REFS, "--groups", tags, "-o", dataset)
    assert done.exit_code == 0 and done.output == ""
    assert run_cli("jsonl", "predictions", DE_EN_HYP, "-o", predictions).exit_code == 0
    rows = [json.loads(line) for line in open(dataset, encoding="utf-8")]
    assert rows[0]["uid"] == "s1" and rows[0]["answer"] == [
        read_lines(path)[0] for path in DE_EN_REFS]
    from_jsonl = run_cli("corpus-score", "--data-format", "dynabench", dataset, predictions,
                         "-m", "bleu", "chrf", "-f", "json")
    from_text = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--groups", tags,
                        "-m", "bleu", "chrf", "-f", "json")
    jsonl_scores = {(row["metric"], row.get("group")): row["score"]
                    for row in json_rows(from_jsonl.output)}
    text_scores = {(row["metric"], row.get("group")): row["score"]
                   for row in json_rows(from_text.output)}
    assert jsonl_scores == text_scores
    assert ("bleu", "fourth") in jsonl_scores


def test_one_reference_is_an_answer_and_ids_may_be_given(tmp_path):
    ids = write(tmp_path, "ids", [f"doc1-{n}" for n in range(15)])
    done = run_cli("jsonl", "dataset", MULTI_REFS[0], "--ids", ids, "-o", "-")
    rows = json_rows(done.output)
    assert [row["uid"] for row in rows] == [f"doc1-{n}" for n in range(15)]
    assert [row["answer"] for row in rows] == read_lines(MULTI_REFS[0])  # CJK, empty lines
    assert all(row["tags"] == [] for row in rows)
    assert "\\u" not in done.output  # UTF-8, not escapes


@pytest.mark.parametrize("args, message", [
    (["dataset", DE_EN_REFS[0], MULTI_REFS[0]],
     f"Error: {DE_EN_REFS[0]} has 150 lines but {MULTI_REFS[0]} has 15 lines; every file "
     f"needs one line per segment\n"),
    (["predictions", MULTI_REFS[0], "--ids", "IDS"],
     "Error: IDS has 2 lines but the text has 15; an ids file has one id a line\n"),
    (["dataset", MULTI_REFS[0], "--groups", "IDS"],
     "Error: IDS has 2 lines but there are 15 segments; a groups file needs one line of "
     "tags per segment\n"),
])
def test_bad_inputs_are_named(tmp_path, args, message):
    ids = write(tmp_path, "ids", ["a", "b"])
    args = [ids if arg == "IDS" else arg for arg in args]
    done = run_cli("jsonl", *args, "-o", str(tmp_path / "out.jsonl"))
    assert done.exit_code == 1
    assert done.output == message.replace("IDS", ids)
    assert not (tmp_path / "out.jsonl").exists()


def test_a_repeated_id_is_refused(tmp_path):
    ids = write(tmp_path, "ids", ["a", "b", "a"])
    hyps = write(tmp_path, "hyps", ["x", "y", "z"])
    done = run_cli("jsonl", "predictions", hyps, "--ids", ids, "-o", "-")
    assert done.exit_code == 1
    assert done.output == f"Error: {ids}: line 3: the id 'a' is there already\n"
