"""All-pairs sentence scores (Metric.pairwise_scores) and minimum Bayes risk decoding
(evalproto.mbr, `evalproto mbr`): every cell equals sacrebleu's sentence_score, on real
WMT text with ties, empty strings, unicode and CJK; the pure-Python path equals the
kernels; each line's choice is the one sacrebleu's scores make."""

import json
import math
from typing import Any, Dict, List, Optional

import numpy as np
import pytest
from conftest import (
    DATA,
    DE_EN_HYP,
    DE_EN_REFS,
    EN_DE_HYP,
    MULTI_HYP,
    MULTI_REFS,
    read_lines,
    run_cli,
)
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER

import evalproto
from evalproto.base.compiled import PURE_PYTHON_VARIABLE, THREADS_VARIABLE
from evalproto.evaluators import _native


def candidate_lines() -> List[List[str]]:
    """Per segment, its candidates: two systems' outputs, two references, an empty
    string and a repeat (a tie), from de-en, en-de and the multilingual file (CJK,
    Cyrillic, casing)."""
    systems = [read_lines(DE_EN_HYP), read_lines(str(DATA / "de-en.hyp.Lan-Bridge.en")),
               *(read_lines(path) for path in DE_EN_REFS)]
    lines = [[*texts, "", texts[0]] for texts in zip(*systems)][:10]
    german = read_lines(EN_DE_HYP)
    multi = [read_lines(MULTI_HYP), *(read_lines(path) for path in MULTI_REFS)]
    lines += [[*texts, german[i], "", texts[1]] for i, texts in enumerate(zip(*multi))]
    return lines


LINES = candidate_lines()
SENTENCE_METRICS: Dict[str, Any] = {
    "bleu": lambda: SacreBLEU(effective_order=True),
    "bleu -lc --tokenize char": lambda: SacreBLEU(lowercase=True, tokenize="char",
                                                  effective_order=True),
    "bleu --tokenize intl --smooth-method floor": lambda: SacreBLEU(
        tokenize="intl", smooth_method="floor", effective_order=True),
    "bleu --tokenize zh --smooth-method none": lambda: SacreBLEU(
        tokenize="zh", smooth_method="none", effective_order=True),
    "bleu --tokenize none --smooth-method add-k --max-ngram-order 3": lambda: SacreBLEU(
        tokenize="none", smooth_method="add-k", max_ngram_order=3, effective_order=True),
    "chrf": lambda: SacreCHRF(),
    "chrf --word-order 2": lambda: SacreCHRF(word_order=2),
    "chrf -lc --whitespace --beta 1": lambda: SacreCHRF(lowercase=True, whitespace=True, beta=1),
    "chrf --eps-smoothing --char-order 4 --word-order 1": lambda: SacreCHRF(
        eps_smoothing=True, char_order=4, word_order=1),
    "ter": lambda: SacreTER(),
    "ter --normalized --case-sensitive --no-punct": lambda: SacreTER(
        normalized=True, case_sensitive=True, no_punct=True),
}


def sacrebleu_matrix(spec: str, hyps: List[List[str]], refs: List[List[str]]) -> np.ndarray:
    metric = SENTENCE_METRICS[spec]()
    return np.array([[[metric.sentence_score(hyp, [ref]).score for ref in refs[b]]
                      for hyp in hyps[b]] for b in range(len(hyps))])


def same_shape_lines(size: int) -> List[List[str]]:
    return [line[:size] for line in LINES if len(line) >= size]


@pytest.mark.parametrize("spec", SENTENCE_METRICS)
def test_every_cell_is_sacrebleus_sentence_score(spec: str) -> None:
    hyps = same_shape_lines(6)
    with evalproto.load(spec) as metric:
        against_themselves = metric.pairwise_scores(hyps)
        refs = [[line[2], line[4], line[3]] for line in hyps]  # references, the empty one
        against_references = metric.pairwise_scores(hyps, refs)
    assert against_themselves.shape == (len(hyps), 6, 6)
    assert against_themselves.dtype == np.float64
    assert (against_themselves == sacrebleu_matrix(spec, hyps, hyps)).all()
    assert against_references.shape == (len(hyps), 6, 3)
    assert (against_references == sacrebleu_matrix(spec, hyps, refs)).all()


@pytest.mark.parametrize("spec", ["bleu", "chrf", "chrf --word-order 2", "ter",
                                  "bleu -lc --tokenize intl"])
def test_pure_python_path_is_the_kernels(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hyps = same_shape_lines(5)
    refs = [line[::-1] for line in hyps]
    with evalproto.load(spec) as metric:
        compiled = metric.pairwise_scores(hyps), metric.pairwise_scores(hyps, refs)
        monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
        calls = []
        for name in ("chrf_pairwise", "bleu_pairwise", "ter_pairwise"):
            monkeypatch.setattr(_native, name, lambda *args, **kwargs: calls.append(args))
        reference = metric.pairwise_scores(hyps), metric.pairwise_scores(hyps, refs)
    assert not calls, "EVALPROTO_PURE_PYTHON=1 still used a kernel"
    for ours, theirs in zip(compiled, reference):
        assert (ours == theirs).all()


@pytest.mark.parametrize("spec", ["bleu", "chrf --word-order 2"])
def test_references_that_are_the_hypotheses(spec: str) -> None:
    """The same strings as references (one list, or copies of its lists) score as the
    hypotheses against themselves; other strings of equal text too."""
    hyps = same_shape_lines(6)
    with evalproto.load(spec) as metric:
        itself = metric.pairwise_scores(hyps)
        assert (metric.pairwise_scores(hyps, hyps) == itself).all()
        assert (metric.pairwise_scores(hyps, [list(line) for line in hyps]) == itself).all()
        equal_texts = [["".join(list(text)) for text in line] for line in hyps]
        assert (metric.pairwise_scores(hyps, equal_texts) == itself).all()


def test_threads_change_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """A matrix large enough for several threads is the one of a single thread."""
    texts = [text for line in LINES for text in line] * 3
    hyps = [texts[i:i + 48] for i in range(0, 48 * 4, 48)]
    with evalproto.load("chrf --word-order 2") as metric:
        threads = metric.pairwise_scores(hyps)
        monkeypatch.setenv(THREADS_VARIABLE, "1")
        one = metric.pairwise_scores(hyps)
    assert (threads == one).all()


def test_metric_without_a_kernel_scores_each_pair() -> None:
    """WER (no all-pairs kernel) scores each pair as a segment of its own."""
    hyps = same_shape_lines(4)[:3]
    with evalproto.load("wer") as metric:
        matrix = metric.pairwise_scores(hyps)
        expected = [[[metric.sentence_scores([hyp], [[ref]])[0] for ref in line] for hyp in line]
                    for line in hyps]
    assert (matrix == np.array(expected)).all()


def test_evaluator_command_and_copies(bleu_evaluator: List[str]) -> None:
    """Over the protocol (pair by pair) and with -j copies, the kernel's numbers."""
    hyps = [[text for text in line if text.strip()][:4] for line in LINES[:4]]
    with evalproto.load("bleu") as metric:
        expected = metric.pairwise_scores(hyps)
    with evalproto.load(command=" ".join(bleu_evaluator)) as command:
        assert (command.pairwise_scores(hyps) == expected).all()
    with evalproto.load("bleu", jobs=2) as copies:
        assert (copies.pairwise_scores(hyps) == expected).all()


@pytest.mark.parametrize("hyps, refs, error, message", [
    ("a b", None, TypeError, "hyps must be a list of batches"),
    (["a", "b"], None, TypeError, r"hyps\[0\] must be a list of hypotheses"),
    ([["a", 3]], None, TypeError, r"hyps\[0\]\[1\] must be a str, got int"),
    ([["a", "b"], ["c"]], None, ValueError, r"hyps\[1\] holds 1 hypotheses but hyps\[0\] holds 2"),
    ([["a"]], [["b"], ["c"]], ValueError, "refs holds 2 batches but hyps holds 1"),
    ([["a"], ["b"]], [["c"], ["d", "e"]], ValueError, r"refs\[1\] holds 2 references"),
    ([["a"]], [[None]], TypeError, r"refs\[0\]\[0\] must be a str, got NoneType"),
])
def test_bad_batches_say_what_was_expected(hyps: Any, refs: Any, error: type,
                                           message: str) -> None:
    with evalproto.load("chrf") as metric:
        with pytest.raises(error, match=message):
            metric.pairwise_scores(hyps, refs)


def test_empty_shapes() -> None:
    with evalproto.load("bleu") as metric:
        assert metric.pairwise_scores([]).shape == (0, 0, 0)
        assert metric.pairwise_scores([[], []], [["a"], ["b"]]).shape == (2, 0, 1)


def test_bleu_kernel_adds_logs_as_a_compensating_sum_would() -> None:
    """Python 3.12's sum() of floats compensates rounding (Neumaier); the kernel does
    the same when told to. Checked against that algorithm on sentences whose four log
    precisions add with rounding."""
    texts = [text for line in LINES for text in line if text][:40]
    plain = np.frombuffer(_native.bleu_pairwise([texts], None, 4, "13a", "exp", 0.0, True, False))
    compensated = np.frombuffer(_native.bleu_pairwise([texts], None, 4, "13a", "exp", 0.0, True,
                                                      True))
    evaluator = SacreBLEU(effective_order=True)
    differing = 0
    for cell, (hyp, ref) in enumerate((h, r) for h in texts for r in texts):
        score = evaluator.sentence_score(hyp, [ref])
        logs = [math.log(p) if p > 0 else -9999999999 for p in score.precisions if p != 0]
        orders = len(logs) or 4
        exact = score.bp * math.exp(_neumaier(logs) / orders) if any(score.counts) else 0.0
        assert compensated[cell] == exact
        assert plain[cell] == score.score
        differing += compensated[cell] != plain[cell]
    assert differing, "no sentence whose sum the compensation changes: the test proves nothing"


def _neumaier(values: List[float]) -> float:
    """CPython 3.12's sum() of floats."""
    total, compensation = 0.0, 0.0
    for value in values:
        t = total + value
        if abs(total) >= abs(value):
            compensation += (total - t) + value
        else:
            compensation += (value - t) + total
        total = t
    return total + compensation if compensation else total


# -- minimum Bayes risk decoding ------------------------------------------------------------

def sacrebleu_choice(spec: str, candidates: List[str], references: Optional[List[str]] = None
                     ) -> Dict[str, Any]:
    metric = SENTENCE_METRICS[spec]()
    expected = [math.fsum(metric.sentence_score(hyp, [ref]).score
                          for ref in (references or candidates)) / len(references or candidates)
                for hyp in candidates]
    best = (min if spec.startswith("ter") else max)(expected)
    index = expected.index(best)
    return {"index": index, "text": candidates[index], "expected": best}


RAGGED = [line[:size] for size, line in zip([1, 2, 6, 3, 7, 5, 4] * 4, LINES)]


@pytest.mark.parametrize("spec", ["chrf", "bleu", "chrf --word-order 2", "ter"])
def test_mbr_chooses_as_sacrebleus_scores_do(spec: str) -> None:
    choices = evalproto.mbr(RAGGED, spec)
    assert [choice.to_dict() for choice in choices] == [
        sacrebleu_choice(spec, line) for line in RAGGED]
    assert any(len(set(line)) < len(line) for line in RAGGED), "no line with a tie"


def test_mbr_with_pseudo_references() -> None:
    references = [line[-2:] for line in LINES[:len(RAGGED)]]
    choices = evalproto.mbr(RAGGED, "chrf", references)
    assert [choice.to_dict() for choice in choices] == [
        sacrebleu_choice("chrf", line, refs) for line, refs in zip(RAGGED, references)]


def test_mbr_takes_a_loaded_metric_and_reports_progress() -> None:
    seen = []

    class Recording:
        def start(self, label: str, total: int, unit: str = "") -> "Recording":
            seen.append((label, total))
            return self

        def advance(self, count: int = 1) -> None:
            seen.append(count)

        def close(self) -> None:
            seen.append("closed")

    with evalproto.load("bleu") as metric:
        choices = evalproto.mbr(RAGGED, metric, progress=Recording())
        assert metric.pairwise_scores([["still open"]]).shape == (1, 1, 1)
    assert len(choices) == len(RAGGED)
    assert seen[0] == ("mbr: bleu", len(RAGGED)) and seen[-1] == "closed"
    assert sum(step for step in seen[1:-1]) == len(RAGGED)


@pytest.mark.parametrize("candidates, references, error, message", [
    ([["a"], []], None, ValueError, r"candidates\[1\] is empty"),
    ([["a"], "b"], None, TypeError, r"candidates\[1\] must be a list of strings"),
    ([["a", 1]], None, TypeError, r"candidates\[0\]\[1\] must be a str"),
    ([["a"]], [["b"], ["c"]], ValueError, "references holds 2 lines but candidates holds 1"),
    ("a b", None, TypeError, "candidates must be a list of lines"),
])
def test_mbr_refuses_bad_lines(candidates: Any, references: Any, error: type,
                               message: str) -> None:
    with pytest.raises(error, match=message):
        evalproto.mbr(candidates, "chrf", references)


def write_lines(path: Any, lines: List[Any]) -> str:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                    encoding="utf-8")
    return str(path)


def test_mbr_command(tmp_path: Any) -> None:
    candidates = write_lines(tmp_path / "candidates.jsonl", RAGGED)
    result = run_cli("mbr", "-m", "chrf", candidates)
    assert result.exit_code == 0, result.output
    assert result.output == "".join(sacrebleu_choice("chrf", line)["text"] + "\n"
                                    for line in RAGGED)
    result = run_cli("mbr", "-m", "ter", candidates, "-f", "json")
    assert [json.loads(line) for line in result.output.splitlines()] == [
        sacrebleu_choice("ter", line) for line in RAGGED]
    references = write_lines(tmp_path / "references.jsonl", [line[:2] for line in LINES[:28]])
    output = tmp_path / "choices.jsonl"
    result = run_cli("mbr", candidates, "--references", references, "-f", "json", "-o",
                     str(output))
    assert result.exit_code == 0 and result.output == ""
    assert [json.loads(line) for line in output.read_text().splitlines()] == [
        sacrebleu_choice("chrf", line, refs) for line, refs in zip(RAGGED, [
            line[:2] for line in LINES[:28]])]
    result = run_cli("mbr", "-", input=json.dumps(["x y", "x", "y"]) + "\n")
    assert result.output == "x y\n"


@pytest.mark.parametrize("lines, message", [
    ('["a"]\nnot json\n', "line 2: not JSON"),
    ('["a"]\n{"a": 1}\n', "line 2: expected a non-empty JSON list of strings (the line's "
                          "candidates), found a JSON object"),
    ('["a"]\n[]\n', "line 2: expected a non-empty JSON list of strings (the line's "
                    "candidates), found an empty list"),
    ('["a"]\n["b", null]\n', "line 2: expected a non-empty JSON list of strings (the line's "
                             "candidates), found a list with a non-string item (NoneType)"),
    ('["a"]\n\n["b"]\n', "line 2: the line is empty"),
    ("", "the file is empty"),
    ('["a\\nb"]\n', "line 1: the chosen candidate holds a line break, which would end its "
                    "line of text output: write JSON (--format json) instead"),
])
def test_mbr_command_names_the_file_and_line(tmp_path: Any, lines: str, message: str) -> None:
    path = tmp_path / "candidates.jsonl"
    path.write_text(lines, encoding="utf-8")
    result = run_cli("mbr", str(path))
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and message in result.output
    assert "Traceback" not in result.output


def test_mbr_command_usage_errors(tmp_path: Any) -> None:
    candidates = write_lines(tmp_path / "candidates.jsonl", [["a", "b"]])
    references = write_lines(tmp_path / "references.jsonl", [["a"], ["b"]])
    result = run_cli("mbr", candidates, "--references", references)
    assert result.exit_code == 1
    assert f"{references} has 2 lines but {candidates} has 1" in result.output
    for args, message in [(["-m", "blue"], "unknown evaluator 'blue'"),
                          (["-m", "bleu", "-e", "bleu-evaluator"], "-m SPEC or -e CMD"),
                          (["-f", "tsv"], "'tsv' is not one of"),
                          (["-o", candidates], "")]:
        result = run_cli("mbr", candidates, *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output
