"""Bad input of every kind ends in one `Error:` line naming the file, the line and what
was expected, with exit status 1 (2 for usage), never a traceback or a wrong number."""

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, fake, run_cli


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("args, code, message", [
    (["-e", "bleu-evaluator 'unclosed"], 1,
     "cannot parse the evaluator command \"bleu-evaluator 'unclosed\": No closing quotation"),
    (["--seed", "-1", "-ci"], 2, "Invalid value for '--seed': expected a whole number >= 0"),
    (["--seed", "1.5", "-ci"], 2, "expected a whole number >= 0 or 'none'"),
    (["-m", "combine bleu=nan"], 1, "a combine part is SPEC=WEIGHT with a finite number"),
    (["-m", "combine bleu=1_0"], 1, "a combine part is SPEC=WEIGHT with a finite number"),
    (["-m", "combine bleu=١"], 1, "a combine part is SPEC=WEIGHT with a finite number"),
    (["--scheduler", "a b"], 1, "--scheduler takes a scheduler's address"),
    (["--scheduler", "local2"], 1, "got 'local2' (local:2?)"),
    (["--scheduler", "local:0"], 1, "--scheduler local:N needs a number of workers"),
    (["--scheduler", "local:\u00b2"], 1, "--scheduler local:N needs a number of workers"),
    # numbers in options are ASCII, as in files: int() and float() take other digits too
    (["--confidence", "-cin", "\u0661\u0660"], 2, "'\u0661\u0660' is not a valid integer range"),
    (["-w", "1_0"], 2, "'1_0' is not a valid integer range"),
    (["--timeout", "\u0661"], 2, "'\u0661' is not a valid float range"),
    (["--timeout", "nan"], 2, "'nan' is not a valid float range"),
    (["-j", "99999999999999999999"], 1,
     "--jobs is the number of copies to run on this machine: at most"),
    # more digits than int() reads (4,300)
    (["-j", "9" * 5000], 2, "is not a valid integer range"),
    (["--scheduler", "local:" + "9" * 5000], 1, "--scheduler local:N needs a number of workers"),
    (["--scheduler", "local:2", "-j", "2"], 2,
     "--jobs runs copies on this machine, and --scheduler"),
])
def test_bad_option_values_are_one_clear_line(args, code, message):
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, *args)
    assert result.exit_code == code, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.slow
@pytest.mark.parametrize("spec, value", [("combine chrf=1e307", "inf"),
                                         ("combine chrf=-1e308 chrf=-1e308", "-inf")])
@pytest.mark.parametrize("extra", [[], ["-j", "2"], ["-sl"], ["-ci", "-cin", "10"]])
def test_a_score_that_is_not_a_finite_number_is_an_error_on_every_path(spec, value, extra):
    """It printed inf (JSON null) with exit 0; over the pipe, the same metric is refused."""
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", spec, *extra, "-f", "json")
    assert result.exit_code == 1, result.output
    assert f"the score of these statistics is not a finite number ({value})" in result.output
    assert result.output.startswith("Error: ") and "null" not in result.output
    import evalproto

    with pytest.raises(evalproto.EvaluatorError, match="not a finite number"):
        evalproto.load(spec).corpus_score(["a b"], [["a b"]])


def test_standard_input_cannot_go_to_a_cluster():
    result = run_cli("corpus-score", DE_EN_REFS[0], "-", "--scheduler", "local:1", input="a\n")
    assert result.exit_code == 2
    assert "the workers read the files: standard input ('-') cannot be one" in result.output


@pytest.mark.parametrize("args, message", [
    (["lm-score", "-", "--scheduler", "local:1"],
     "the workers read the files: standard input ('-') cannot be one"),
    (["stats", DE_EN_REFS[0], DE_EN_HYP, "-o", "-", "--scheduler", "local:1", "-j", "2"],
     "--jobs runs copies on this machine, and --scheduler on the Dask cluster's workers"),
])
def test_every_command_refuses_what_a_cluster_cannot_take(args, message):
    result = run_cli(*args, input="{}\n")
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_a_decompression_bomb_is_refused_after_a_bounded_read(tmp_path):
    """About 100 kB of gzip that would expand to 100 MB without a line end."""
    bomb = write(tmp_path / "bomb.gz", gzip.compress(b"a" * 100_000_000, compresslevel=9))
    assert os.path.getsize(bomb) < 200_000
    result = run_cli("corpus-score", DE_EN_REFS[0], bomb)
    assert result.exit_code == 1
    assert f"{bomb}: line 1 is longer than 64 MiB; expected text with one segment" in result.output


def test_a_long_line_is_named_by_its_number(tmp_path):
    long = write(tmp_path / "long.txt", b"short\nfine\n" + b"x" * (65 << 20) + b"\nend\n")
    result = run_cli("corpus-score", DE_EN_REFS[0], long)
    assert result.exit_code == 1 and f"{long}: line 3 is longer than 64 MiB" in result.output


def test_a_huge_file_without_a_line_end_is_refused_without_being_read(tmp_path):
    """4 GB of nothing but zeros (a sparse file), scored with 1 GB of data memory: the
    line is found too long where the file lies, before any of it is read."""
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as stream:
        stream.truncate(4 << 30)

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))

    result = subprocess.run([sys.executable, "-m", "evalproto", "corpus-score", DE_EN_REFS[0],
                             str(huge)], capture_output=True, text=True, timeout=120,
                            preexec_fn=limit_memory)
    assert result.returncode == 1
    assert f"{huge}: line 1 is longer than 64 MiB" in result.stderr, result.stderr


@pytest.mark.parametrize("content, message", [
    (b"sentence_id\ttoken_id\ttoken\tsurprisal\n1\t1\tcaf\xe9\t2.5\n",
     "line 2: invalid UTF-8 (byte 0xe9); expected UTF-8 text"),
    ("sentence_id\ttoken_id\ttoken\tsurprisal\n1\t1\ta\t1_0\n".encode(),
     "line 2: surprisal '1_0' is not a non-negative finite number of bits"),
    ("sentence_id\ttoken_id\ttoken\tsurprisal\n1\t1\ta\t٣\n".encode(),
     "line 2: surprisal '٣' is not a non-negative finite number of bits"),
    ("sentence_id\ttoken_id\ttoken\tsurprisal\n1\t1\ta\t１\n".encode(),
     "line 2: surprisal '１' is not a non-negative finite number"),
])
def test_a_bad_surprisal_table_is_named(tmp_path, content, message):
    table = write(tmp_path / "surprisals.tsv", content)
    result = run_cli("lm-score", table)
    assert result.exit_code == 1 and f"{table}: {message}" in result.output


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_is_shown_escaped(tmp_path):
    name = os.fsdecode(b"hyp\xff.txt")
    (tmp_path / name).write_bytes(Path(DE_EN_HYP).read_bytes())
    for args in ([str(tmp_path / name)], [str(tmp_path / name), "-f", "json"],
                 [str(tmp_path / os.fsdecode(b"missing\xfe.txt"))]):
        completed = subprocess.run([sys.executable, "-m", "evalproto", "corpus-score",
                                    DE_EN_REFS[0], *args], capture_output=True)
        assert b"Traceback" not in completed.stderr
        assert completed.returncode in (0, 1)
    assert b"missing\\udcfe.txt: no such file" in completed.stderr


def test_statistics_that_add_up_beyond_a_double_are_an_error_not_a_traceback(tmp_path):
    command = fake(tmp_path, 'print("1e308 1 1", flush=True); continue', when="True")
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "the statistic stat1 adds up beyond the largest number a double holds" in result.output


def test_names_and_tags_cannot_forge_lines_of_a_text_or_tsv_report(tmp_path):
    """A tag holding a newline used to print a line of its own ("Group: forged")."""
    refs = tmp_path / "ref"
    refs.write_text("a b c\nd e f\n")
    groups = tmp_path / "groups"
    groups.write_bytes(b"x\rGroup: forged\ty\\z\nz\n")
    hyp = tmp_path / "hyp\twith tab"
    hyp.write_text("a b c\nd e\n")
    text = run_cli("corpus-score", str(refs), str(hyp), "--groups", str(groups)).output
    assert "Group: x\\rGroup: forged\\ty\\\\z" in text
    assert not any(line.startswith("Group: forged") for line in text.splitlines())
    assert f"{tmp_path}/hyp\\twith tab" in text
    tsv = run_cli("corpus-score", str(refs), str(hyp), "--groups", str(groups), "-f", "tsv")
    rows = [line.split("\t") for line in tsv.output.splitlines()]
    assert {len(row) for row in rows} == {10}
    assert rows[2][:2] == [f"{tmp_path}/hyp\\twith tab", "x\\rGroup: forged\\ty\\\\z"]


def test_a_dataset_tag_with_a_newline_stays_on_its_line(tmp_path):
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"id": "1", "answer": "a", "tags": ["x\nGroup: forged"]}) + "\n")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"id": "1", "pred": "a"}) + "\n")
    result = run_cli("corpus-score", "--data-format", "dynabench", str(dataset),
                     str(predictions), "-m", "exact-match")
    assert result.exit_code == 0, result.output
    assert "Group: x\\nGroup: forged" in result.output
    assert not any(line.startswith("Group: forged") for line in result.output.splitlines())


def test_a_size_of_more_digits_than_int_reads_is_a_usage_error():
    result = run_cli("serve", "--max-upload", "9" * 5000)
    assert result.exit_code == 2 and "expected a size such as 64M" in result.output
    assert "Traceback" not in result.output and "internal error" not in result.output


def test_a_wait_timeout_in_other_digits_is_a_usage_error():
    result = run_cli("board", "leaderboard", "mt", "--wait", "--wait-timeout", "\u0661")
    assert result.exit_code == 2 and "'\u0661' is not a valid float range" in result.output
