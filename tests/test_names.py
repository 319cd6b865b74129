"""Systems named on the command line, with --names A,B or -i NAME=FILE, everywhere a
system is reported."""

import pytest
from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, json_rows, run_cli


def systems(*args):
    result = run_cli("corpus-score", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return [row["system"] for row in json_rows(result.output)]


def test_name_equals_file_names_a_system():
    assert systems(*DE_EN_REFS, "-i", f"LT22={DE_EN_HYP}", f"Lan-Bridge={DE_EN_HYP2}") == [
        "LT22", "Lan-Bridge"]
    # a named and an unnamed system
    assert systems(*DE_EN_REFS, "-i", f"LT22={DE_EN_HYP}", DE_EN_HYP2) == ["LT22", DE_EN_HYP2]


def test_names_option_names_the_systems_in_order():
    assert systems(*DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2, "--names", "a, b") == ["a", "b"]


def test_names_reach_paired_tests_and_text_output():
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", f"base={DE_EN_HYP}",
                     f"new={DE_EN_HYP2}", "--paired-bs", "--paired-bs-n", "50")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("Baseline: base") and lines[2].startswith("new ")


def test_a_file_whose_name_holds_an_equals_sign_is_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x=hyp").write_text(open(DE_EN_HYP).read())
    assert systems(*DE_EN_REFS, "-i", "x=hyp") == ["x=hyp"]
    # both readings exist: refused, not guessed
    (tmp_path / "hyp").write_text(open(DE_EN_HYP2).read())
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", "x=hyp")
    assert result.exit_code == 2 and "'x=hyp' is ambiguous" in result.output
    assert "--names" in result.output
    # --names settles it: the words are files
    assert systems(*DE_EN_REFS, "-i", "x=hyp", "--names", "X") == ["X"]


@pytest.mark.parametrize("args, message", [
    (["-i", DE_EN_HYP, DE_EN_HYP2, "--names", "a"], "--names gives 1 names for 2 systems"),
    (["-i", DE_EN_HYP, DE_EN_HYP2, "--names", "a,a"], "two systems are named 'a'"),
    (["-i", f"a={DE_EN_HYP}", f"a={DE_EN_HYP2}"], "two systems are named 'a'"),
    (["-i", DE_EN_HYP, DE_EN_HYP2, "--names", "a,"], "a system's name cannot be empty"),
])
def test_bad_names_are_usage_errors(args, message):
    result = run_cli("corpus-score", *DE_EN_REFS, *args)
    assert result.exit_code == 2 and message in result.output


def test_a_name_before_a_missing_file_reports_the_word_as_a_file():
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", "a=/no/such/file")
    assert result.exit_code == 1 and "a=/no/such/file" in result.output


@pytest.mark.dask
def test_names_on_a_cluster(tmp_path):
    import evalproto
    comparison = evalproto.score_files(DE_EN_REFS, [DE_EN_HYP, DE_EN_HYP2], ["bleu"],
                                       evalproto.Analysis(), names=["one", "two"],
                                       scheduler="local:1")
    assert [result.system for result in comparison.results] == ["one", "two"]
