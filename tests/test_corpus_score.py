"""`evalproto corpus-score` through click's CliRunner: inputs, outputs and errors."""

import gzip
import shutil

import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_HYP2,
    DE_EN_REFS,
    json_rows,
    read_lines,
    run_cli,
    script,
)
from sacrebleu.metrics import BLEU as SacreBLEU


def sacrebleu_score(hyp_path, ref_paths=DE_EN_REFS, **options):
    return SacreBLEU(**options).corpus_score(
        read_lines(hyp_path), [read_lines(path) for path in ref_paths]).score


def test_json_row_has_what_programs_need():
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json_rows(result.output)
    assert row["system"] == DE_EN_HYP and row["metric"] == "bleu"
    assert row["score"] == pytest.approx(sacrebleu_score(DE_EN_HYP), abs=1e-9)
    assert row["n"] == 150
    assert row["stat_names"][:2] == ["hyp_len", "ref_len"]
    assert len(row["stats"]) == 10 and all(isinstance(value, int) for value in row["stats"])
    assert row["signature"].startswith("nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|")
    assert row["higher_is_better"] is True


def test_several_systems_and_metrics_in_the_order_given():
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", DE_EN_HYP2,
                     "-m", "bleu -tok intl", "-e", script("bleu-evaluator") + " --lowercase",
                     "-m", "bleu", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json_rows(result.output)
    assert [(row["system"], row["metric"].split()[0].rsplit("/", 1)[-1]) for row in rows] == [
        (DE_EN_HYP, "bleu"), (DE_EN_HYP, "bleu-evaluator"), (DE_EN_HYP, "bleu"),
        (DE_EN_HYP2, "bleu"), (DE_EN_HYP2, "bleu-evaluator"), (DE_EN_HYP2, "bleu")]
    for row in rows:
        options = {"tokenize": "intl"} if "intl" in row["metric"] else (
            {"lowercase": True} if "lowercase" in row["metric"] else {})
        assert row["score"] == pytest.approx(sacrebleu_score(row["system"], **options), abs=1e-9)
    assert rows[1]["signature"].startswith("nrefs:2|case:lc|")


def test_external_evaluator_gives_the_in_process_numbers():
    in_process = json_rows(run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-f", "json").output)
    external = json_rows(run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-f", "json",
                                 "-e", script("bleu-evaluator")).output)
    assert external[0]["stats"] == in_process[0]["stats"]
    assert external[0]["score"] == in_process[0]["score"]
    assert external[0]["signature"] == in_process[0]["signature"]


def test_text_table_shows_scores_details_and_signatures():
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", DE_EN_HYP2, "-w", "2")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["System", "bleu"]
    assert lines[1].split() == [DE_EN_HYP, f"{sacrebleu_score(DE_EN_HYP):.2f}"]
    assert lines[2].split() == [DE_EN_HYP2, f"{sacrebleu_score(DE_EN_HYP2):.2f}"]
    for line, hyp_path in zip(lines[4:6], [DE_EN_HYP, DE_EN_HYP2]):  # sacrebleu's BLEU line
        sacre = SacreBLEU().corpus_score(read_lines(hyp_path),
                                         [read_lines(path) for path in DE_EN_REFS])
        assert line.split(None, 2) == [hyp_path, "bleu", sacre.format(width=2)]
    assert lines[7].startswith("bleu: nrefs:2|case:mixed|")


def test_tsv_has_a_header_and_one_row_per_result():
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-f", "tsv")
    header, row = result.output.splitlines()
    assert header.split("\t") == ["system", "group", "metric", "score", "mean", "ci",
                                   "p_value", "n", "signature", "stats"]
    fields = dict(zip(header.split("\t"), row.split("\t")))
    assert float(fields["score"]) == pytest.approx(sacrebleu_score(DE_EN_HYP), abs=1e-9)
    assert fields["n"] == "150" and len(fields["stats"].split()) == 10
    assert fields["group"] == fields["mean"] == fields["p_value"] == ""


def test_stdin_and_gzip_inputs(tmp_path):
    gz = tmp_path / "ref.A.gz"
    with open(DE_EN_REFS[0], "rb") as plain, gzip.open(gz, "wb") as packed:
        shutil.copyfileobj(plain, packed)
    with open(DE_EN_HYP, encoding="utf-8") as stream:
        hyps = stream.read()
    result = run_cli("corpus-score", str(gz), DE_EN_REFS[1], "-", "-f", "json", input=hyps)
    assert result.exit_code == 0, result.output
    assert json_rows(result.output)[0]["score"] == pytest.approx(
        sacrebleu_score(DE_EN_HYP), abs=1e-9)


def test_crlf_lines_score_as_lf_lines(tmp_path):
    crlf = tmp_path / "hyp.crlf"
    crlf.write_bytes(open(DE_EN_HYP, "rb").read().replace(b"\n", b"\r\n"))
    plain = json_rows(run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-f", "json").output)
    windows = json_rows(run_cli("corpus-score", *DE_EN_REFS, str(crlf), "-f", "json").output)
    assert windows[0]["stats"] == plain[0]["stats"]


def test_different_line_counts_name_both_files_and_counts(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("".join(line + "\n" for line in read_lines(DE_EN_HYP)[:149]))
    result = run_cli("corpus-score", *DE_EN_REFS, str(short))
    assert result.exit_code == 1
    assert f"{DE_EN_REFS[0]} has 150 lines but {short} has 149 lines" in result.output


@pytest.mark.parametrize("make, message", [
    (lambda d: str(d / "missing.txt"), "missing.txt: no such file"),
    (lambda d: str(d), "is a directory"),
    (lambda d: _write(d / "empty.txt", b""), "empty.txt: file is empty"),
    (lambda d: _write(d / "latin1.txt", "ok\ncaf\xe9\n".encode("latin-1")),
     "latin1.txt: line 2: invalid UTF-8 (byte 0xe9)"),
    (lambda d: _write(d / "cut.gz", gzip.compress(b"a\nb\n" * 1000)[:-30]),
     "cut.gz: truncated or corrupt gzip data"),
])
def test_bad_input_files_are_named(tmp_path, make, message):
    result = run_cli("corpus-score", DE_EN_REFS[0], make(tmp_path))
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def _write(path, data):
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["corpus-score", DE_EN_HYP], "at least one reference file and a hypothesis file"),
    (["corpus-score"], "Missing argument"),
    (["corpus-score", *DE_EN_REFS, DE_EN_HYP, "--format", "xml"], "Invalid value"),
])
def test_usage_errors_exit_two(args, message):
    result = run_cli(*args)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize("spec, message", [
    ("blue", "unknown evaluator 'blue'; registered evaluators: bleu"),
    ("bleu --tokenize klingon", "in evaluator spec 'bleu --tokenize klingon'"),
    ("bleu --smooth", "No such option"),
    ("bleu 'unclosed", "cannot parse evaluator spec"),
])
def test_bad_metric_specs_are_usage_errors_that_explain(spec, message):
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", spec)
    assert result.exit_code == 2
    assert message in result.output


def test_same_system_twice_is_refused():
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", DE_EN_HYP)
    assert result.exit_code == 1 and "given twice" in result.output


def test_python_dash_m_runs_the_same_command():
    import subprocess
    import sys
    completed = subprocess.run([sys.executable, "-m", "evalproto", "corpus-score", *DE_EN_REFS,
                                DE_EN_HYP, "-f", "json"], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert json_rows(completed.stdout)[0]["score"] == pytest.approx(
        sacrebleu_score(DE_EN_HYP), abs=1e-9)


@pytest.mark.parametrize("tokenizer, module, extra", [
    ("ja-mecab", "tokenizer_ja_mecab", "ja"), ("ko-mecab", "tokenizer_ko_mecab", "ko")])
def test_a_missing_extra_is_named(monkeypatch, tokenizer, module, extra):
    import importlib
    tokenizer_module = importlib.import_module(f"sacrebleu.tokenizers.{module}")
    monkeypatch.setattr(tokenizer_module, "MeCab", None)  # as when mecab is not installed
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", f"bleu -tok {tokenizer}")
    assert result.exit_code == 1
    assert f"pip install 'evalproto[{extra}]'" in result.output


def test_info_prints_the_info_json():
    import json
    result = run_cli("info", "chrf --word-order 2")
    info = json.loads(result.output)
    assert info["name"] == "chrf" and len(info["stats"]) == 24
    assert info["signature"].startswith("case:mixed|eff:yes|nc:6|nw:2|space:no|")
    bad = run_cli("info", "f1")
    assert bad.exit_code == 2 and "Missing option '--labels'" in bad.output.replace('"', "'")


@pytest.mark.parametrize("systems", [
    ["-i", DE_EN_HYP, DE_EN_HYP2],  # sacrebleu's habit
    ["-i", DE_EN_HYP, "-i", DE_EN_HYP2],
    [f"--input={DE_EN_HYP}", DE_EN_HYP2],
    ["-m", "bleu", "-i", DE_EN_HYP, DE_EN_HYP2, "-f", "json"],
])
def test_i_takes_one_or_more_systems_as_sacrebleu_does(systems):
    """`REF -i SYS1 SYS2` scores two systems against one reference (it used to score
    SYS1 against two references, SYS2 being taken for a reference)."""
    result = run_cli("corpus-score", DE_EN_REFS[0], *systems, "-f", "json")
    assert result.exit_code == 0, result.output
    rows = json_rows(result.output)
    assert [row["system"] for row in rows] == [DE_EN_HYP, DE_EN_HYP2]
    sacrebleu = SacreBLEU()
    refs = [read_lines(DE_EN_REFS[0])]
    for row in rows:
        assert row["signature"].startswith("nrefs:1|")
        assert row["score"] == sacrebleu.corpus_score(read_lines(row["system"]), refs).score


def test_a_file_after_the_systems_and_another_option_is_refused():
    result = run_cli("corpus-score", DE_EN_REFS[0], "-i", DE_EN_HYP, "-w", "2", DE_EN_HYP2)
    assert result.exit_code == 2
    assert f"{DE_EN_HYP2!r} comes after -i and another option" in result.output
