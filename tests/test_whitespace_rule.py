"""One rule for whitespace around a segment, on every path: it is not part of the segment.

The protocol strips every field, so the in-process path strips too; every built-in metric
then gives the same number in process (-m), over the pipe (-e) and with -j. (Dask: see
test_distributed.py, which runs the same corpus on a cluster.)"""

from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import json_rows, run_cli, script

from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.chrf import CHRF

TEXT_REFS = ["  The cat sat on the mat.", "\tIt rained all day . ", "Paris", "  ",
             "a b c d e f", " 42 apples and 7 pears", "\u3000東京は晴れ", "x"]
TEXT_HYPS = [" The cat sat on a mat.", "It rained all day.\t", "  Paris", "nothing here",
             "\u00a0a b c d f", "42 apples and 7 pears", "東京は晴れ ", "\tx"]
LABEL_REFS = [" pos", "neg", "\tneu", "pos ", "neg"]
LABEL_HYPS = ["pos", " neg", "neu", " pos", "pos"]

TEXT_SPECS = ["bleu", "bleu -tok char", "chrf", "chrf --whitespace", "chrf -cw 2", "ter",
              "wer", "cer", "exact-match", "squad", "combine bleu=0.5 ter=-0.5"]
LABEL_SPECS = ["f1 --labels pos,neg,neu", "exact-match"]


def write_corpus(directory: Path, refs: List[str], hyps: List[str]) -> Tuple[str, str]:
    (directory / "ref").write_text("".join(line + "\n" for line in refs), encoding="utf-8")
    (directory / "hyp").write_text("".join(line + "\n" for line in hyps), encoding="utf-8")
    return str(directory / "ref"), str(directory / "hyp")


def evaluator_command(spec: str) -> str:
    name, *options = spec.split(" ", 1)
    return " ".join([script(f"{name}-evaluator"), *options])


def scores(ref: str, hyp: str, *args: str) -> Dict[str, float]:
    result = run_cli("corpus-score", ref, hyp, *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return [(row["stats"], row["score"]) for row in json_rows(result.output)]


@pytest.mark.parametrize("spec", [*TEXT_SPECS, *LABEL_SPECS])
def test_every_path_gives_the_same_number(tmp_path, spec):
    refs, hyps = (LABEL_REFS, LABEL_HYPS) if spec in LABEL_SPECS[:1] else (TEXT_REFS, TEXT_HYPS)
    ref, hyp = write_corpus(tmp_path, refs, hyps)
    in_process = scores(ref, hyp, "-m", spec)
    assert scores(ref, hyp, "-e", evaluator_command(spec)) == in_process
    assert scores(ref, hyp, "-m", spec, "-j", "2") == in_process
    stripped = tmp_path / "stripped"
    stripped.mkdir()
    assert scores(*write_corpus(stripped, [r.strip() for r in refs],
                                [h.strip() for h in hyps]), "-m", spec) == in_process


def test_the_python_level_strips_too():
    chrf = CHRF(whitespace=True)
    assert chrf.stats_many([(["  a b"], " a b ")]).tolist() == chrf.stats_many(
        [(["a b"], "a b")]).tolist()
    assert chrf.checked_stats(["  a b"], " a b ") == chrf.checked_stats(["a b"], "a b")


@pytest.mark.parametrize("refs", ["the cat", b"the cat"])
def test_a_string_where_the_references_belong_is_a_type_error(refs):
    """Iterating a string would make each character a reference (BLEU 5.48 for an
    identical hypothesis)."""
    with pytest.raises(TypeError, match="segment 1: the references are one (str|bytes); "
                                        "expected a list of reference strings"):
        BLEU().stats_many([(refs, "the cat")])
    with pytest.raises(TypeError, match="expected a list of reference strings"):
        BLEU().checked_stats(refs, "the cat")


@pytest.mark.parametrize("items, problem", [
    ([(["a"], None)], "segment 1: the hypothesis is of type NoneType; expected str"),
    ([(["a"], "a"), ([1], "b")], "segment 2: a reference is of type int; expected str"),
    (["a b"], "segment 1: expected a \\(references, hypothesis\\) pair, got str"),
    ([(["a"], "b", "c")], "segment 1: expected a \\(references, hypothesis\\) pair"),
    ([(5, "b")], "segment 1: the references are a int; expected a list"),
])
def test_malformed_items_are_type_errors_that_say_what_was_expected(items, problem):
    with pytest.raises(TypeError, match=problem):
        BLEU().stats_many(items)
