"""BLEU statistics, scores and signatures against sacrebleu itself, on real text."""

import subprocess
import sys

import numpy as np
import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_REFS,
    EN_DE_HYP,
    EN_DE_REFS,
    MULTI_HYP,
    MULTI_REFS,
    json_rows,
    read_lines,
    run_cli,
)
from sacrebleu.metrics import BLEU as SacreBLEU

from evalproto import __version__
from evalproto.evaluators.bleu import BLEU, SMOOTH_DEFAULTS

CORPORA = {
    "de-en": (DE_EN_REFS, DE_EN_HYP),
    "en-de": (EN_DE_REFS, EN_DE_HYP),
    "multilingual": (MULTI_REFS, MULTI_HYP),
}
TOKENIZERS = ["13a", "intl", "zh", "ja-mecab", "ko-mecab", "char", "none"]
SMOOTHING = [("exp", None), ("none", None), ("floor", None), ("floor", 0.3),
             ("add-k", None), ("add-k", 2.0)]


def sacrebleu_score(ref_paths, hyp_path, **options):
    metric = SacreBLEU(**options)
    refs = [read_lines(path) for path in ref_paths]
    score = metric.corpus_score(read_lines(hyp_path), refs)
    return score.score, metric.get_signature().format()


def our_score(ref_paths, hyp_path, spec="bleu"):
    result = run_cli("corpus-score", *ref_paths, hyp_path, "-m", spec, "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json_rows(result.output)
    return row["score"], row["signature"]


def without_version(signature):
    return signature.rsplit("|version:", 1)[0]


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_every_tokenizer_matches_sacrebleu(corpus, tokenizer):
    refs, hyp = CORPORA[corpus]
    expected, expected_signature = sacrebleu_score(refs, hyp, tokenize=tokenizer)
    score, signature = our_score(refs, hyp, f"bleu --tokenize {tokenizer}")
    assert score == expected
    assert without_version(signature) == without_version(expected_signature)
    assert signature.endswith(f"|version:evalproto-{__version__}")


def test_smoothing_defaults_are_sacrebleus():
    assert SMOOTH_DEFAULTS == SacreBLEU.SMOOTH_DEFAULTS
    assert list(SMOOTH_DEFAULTS) == list(SacreBLEU.SMOOTH_DEFAULTS)  # the order --help shows


@pytest.mark.parametrize("method, value", SMOOTHING)
@pytest.mark.parametrize("corpus", ["de-en", "multilingual"])
def test_every_smoothing_matches_sacrebleu(corpus, method, value):
    refs, hyp = CORPORA[corpus]
    spec = f"bleu --smooth-method {method}" + ("" if value is None else f" --smooth-value {value}")
    expected, expected_signature = sacrebleu_score(refs, hyp, smooth_method=method,
                                                   smooth_value=value)
    score, signature = our_score(refs, hyp, spec)
    assert score == expected
    assert without_version(signature) == without_version(expected_signature)


@pytest.mark.parametrize("spec, options", [
    ("bleu --lowercase", {"lowercase": True}),
    ("bleu -lc -tok intl", {"lowercase": True, "tokenize": "intl"}),
    ("bleu --effective-order", {"effective_order": True}),
    ("bleu --max-ngram-order 2", {"max_ngram_order": 2}),
    ("bleu --max-ngram-order 6 --smooth-method floor", {"max_ngram_order": 6,
                                                        "smooth_method": "floor"}),
])
@pytest.mark.parametrize("corpus", ["en-de", "multilingual"])
def test_other_options_match_sacrebleu(corpus, spec, options):
    refs, hyp = CORPORA[corpus]
    expected, _ = sacrebleu_score(refs, hyp, **options)
    score, _ = our_score(refs, hyp, spec)
    assert score == expected


def test_one_reference_and_the_nrefs_signature():
    expected, expected_signature = sacrebleu_score(DE_EN_REFS[:1], DE_EN_HYP)
    score, signature = our_score(DE_EN_REFS[:1], DE_EN_HYP)
    assert score == expected
    assert signature.startswith("nrefs:1|") and expected_signature.startswith("nrefs:1|")


@pytest.mark.parametrize("smooth_method", ["exp", "floor", "add-k", "none"])
def test_sentence_statistics_match_sacrebleu_sentence_scores(smooth_method):
    """Every segment's own row scores as sacrebleu's sentence_score: stats are right
    segment by segment, not only in sum."""
    ours = BLEU(smooth_method=smooth_method, effective_order=True)
    theirs = SacreBLEU(smooth_method=smooth_method, effective_order=True)
    refs = list(zip(*(read_lines(path) for path in EN_DE_REFS)))
    for segment_refs, hyp in zip(refs, read_lines(EN_DE_HYP)):
        row = ours.checked_stats(segment_refs, hyp)
        expected = theirs.sentence_score(hyp, list(segment_refs)).score
        assert ours.checked_score(row) == expected


def test_variable_number_of_references_per_segment():
    refs_a, refs_b = (read_lines(path) for path in DE_EN_REFS)
    hyps = read_lines(DE_EN_HYP)
    # sacrebleu marks a missing reference with None; every third segment has one only
    refs_b_partial = [None if i % 3 == 0 else ref for i, ref in enumerate(refs_b)]
    expected = SacreBLEU().corpus_score(hyps, [refs_a, refs_b_partial]).score
    bleu = BLEU()
    items = [([a] if b is None else [a, b], hyp) for a, b, hyp in zip(refs_a, refs_b_partial, hyps)]
    assert bleu.checked_score(bleu.stats_many(items).sum(axis=0)) == expected


@pytest.mark.parametrize("effective_order", [False, True])
@pytest.mark.parametrize("smooth_method", ["exp", "floor", "add-k", "none"])
@pytest.mark.parametrize("order", [2, 4, 6])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scores_match_compute_bleu_bit_for_bit(smooth_method, effective_order, order, dtype):
    """The score of a vector, on the corners compute_bleu branches on: no matches,
    orders with no n-grams (also out of order), empty hypotheses and fractional
    lengths; in float64 (corpus scores) and float32 (sacrebleu's bootstrap resamples)."""
    bleu = BLEU(smooth_method=smooth_method, effective_order=effective_order,
                max_ngram_order=order)
    vectors = np.random.default_rng(order).integers(0, 4, size=(600, 2 + 2 * order))
    vectors = vectors.astype(np.float64)
    vectors[::3, 2:] *= 50
    vectors[1::7, 2 + order:] = 0
    vectors[::11, 0] = 0
    vectors[::13] += 0.5
    for vector in vectors.astype(dtype):  # the arithmetic alone: many vectors are impossible
        expected = SacreBLEU.compute_bleu(
            list(vector[2:2 + order]), list(vector[2 + order:]), int(vector[0]),
            int(vector[1]), smooth_method, None, effective_order, order)
        assert bleu.score(vector) == expected.score
        assert bleu.details(vector)["precisions"] == expected.precisions
        if dtype == np.float64 and bleu.broken_rule(vector[None, :], summed=True) is None:
            assert bleu.checked_score(vector) == expected.score


def test_add_k_smoothing_does_not_change_the_vector_it_scores():
    bleu = BLEU(smooth_method="add-k")
    vector = np.array([5, 6, 3, 1, 0, 0, 5, 4, 3, 2], dtype=np.float64)
    first = bleu.checked_score(vector)
    assert list(vector) == [5, 6, 3, 1, 0, 0, 5, 4, 3, 2]
    assert bleu.checked_score(vector) == first


@pytest.mark.parametrize("spec", ["bleu", "bleu -tok intl --smooth-method floor -lc"])
def test_same_number_as_the_sacrebleu_command_line(spec):
    """The sacrebleu CLI itself, run on the same files: the same 12 decimals."""
    options = spec.split()[1:]
    completed = subprocess.run(
        [sys.executable, "-m", "sacrebleu", *EN_DE_REFS, "-i", EN_DE_HYP, "-m", "bleu",
         "-w", "12", "-b", *options], capture_output=True, text=True, check=True)
    score, _ = our_score(EN_DE_REFS, EN_DE_HYP, spec)
    assert f"{score:.12f}" == completed.stdout.strip()
