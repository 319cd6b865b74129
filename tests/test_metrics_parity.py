"""chrF, TER, WER, CER, exact match, SQuAD, macro-F1 and combine against their
reference implementations, on real text, in process (-m) and over the protocol (-e)."""

import random
import re
import string
from collections import Counter

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
    script,
)
from jiwer import Compose, RemovePunctuation, ToLowerCase, cer, process_words, wer
from jiwer.transformations import cer_default, wer_default
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER
from sklearn.metrics import f1_score

MODES = ["in-process", "protocol"]


def corpus_row(mode, spec, ref_paths, hyp_path):
    """The JSON row of `corpus-score` with SPEC run in process or as NAME-evaluator."""
    name, *options = spec.split(" ", 1)
    if mode == "in-process":
        flag, value = "-m", spec
    else:
        flag, value = "-e", " ".join([script(f"{name}-evaluator"), *options])
    result = run_cli("corpus-score", *ref_paths, hyp_path, flag, value, "-f", "json")
    assert result.exit_code == 0, result.output
    (row,) = json_rows(result.output)
    return row


def excerpt(tmp_path, paths, lines):
    """The first `lines` lines of each file, copied into tmp_path."""
    copies = []
    for path in paths:
        copy = tmp_path / path.rsplit("/", 1)[-1]
        copy.write_text("".join(line + "\n" for line in read_lines(path)[:lines]),
                        encoding="utf-8")
        copies.append(str(copy))
    return copies


def without_version(signature):
    return signature.rsplit("|version:", 1)[0]


CHRF_CASES = [
    ("chrf", {}),
    ("chrf --word-order 2", {"word_order": 2}),
    ("chrf -cc 4 -cw 1 --beta 1", {"char_order": 4, "word_order": 1, "beta": 1}),
    ("chrf --lowercase --whitespace", {"lowercase": True, "whitespace": True}),
    ("chrf --eps-smoothing -cw 2", {"eps_smoothing": True, "word_order": 2}),
    ("chrf -cc 0 -cw 2", {"char_order": 0, "word_order": 2}),
]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec, options", CHRF_CASES)
@pytest.mark.parametrize("refs, hyp", [(DE_EN_REFS, DE_EN_HYP), (EN_DE_REFS, EN_DE_HYP),
                                       (MULTI_REFS, MULTI_HYP)], ids=["de-en", "en-de", "multi"])
def test_chrf_matches_sacrebleu(mode, spec, options, refs, hyp):
    metric = SacreCHRF(**options)
    expected = metric.corpus_score(read_lines(hyp), [read_lines(path) for path in refs])
    row = corpus_row(mode, spec, refs, hyp)
    assert row["score"] == expected.score
    signature = without_version(metric.get_signature().format())
    if options.get("beta", 2) != 2:
        signature += f"|beta:{options['beta']}"
    assert without_version(row["signature"]) == signature


def test_chrf_keeps_the_best_reference_per_segment():
    from evalproto.evaluators.chrf import CHRF
    chrf = CHRF()
    far, near = "completely unrelated words", "the cat sat on the mat"
    hyp = "the cat sat on a mat"
    assert chrf.stats([far, near], hyp) == chrf.stats([near], hyp)


TER_CASES = [
    ("ter", {}),
    ("ter --case-sensitive", {"case_sensitive": True}),
    ("ter --normalized", {"normalized": True}),
    ("ter --no-punct", {"no_punct": True}),
    ("ter --normalized --asian-support", {"normalized": True, "asian_support": True}),
    ("ter --no-punct --asian-support --case-sensitive",
     {"no_punct": True, "asian_support": True, "case_sensitive": True}),
]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec, options", TER_CASES)
@pytest.mark.parametrize("corpus", ["de-en", "en-de", "multi"])
def test_ter_matches_sacrebleu(tmp_path, mode, spec, options, corpus):
    refs, hyp = {"de-en": (DE_EN_REFS, DE_EN_HYP), "en-de": (EN_DE_REFS, EN_DE_HYP),
                 "multi": (MULTI_REFS, MULTI_HYP)}[corpus]
    *refs, hyp = excerpt(tmp_path, [*refs, hyp], 40)  # sacrebleu's TER is slow
    metric = SacreTER(**options)
    expected = metric.corpus_score(read_lines(hyp), [read_lines(path) for path in refs])
    row = corpus_row(mode, spec, refs, hyp)
    assert row["score"] == expected.score
    assert row["stats"][0] == expected.num_edits
    assert without_version(row["signature"]) == without_version(metric.get_signature().format())


@pytest.mark.parametrize("options", [{"normalized": True}, {"normalized": True, "no_punct": True,
                                                          "case_sensitive": True}])
def test_ter_tokenizes_references_twice_as_sacrebleu_does(options):
    """A second Tercom pass splits "Squire's" once more; sacrebleu makes it on references."""
    from evalproto.evaluators.ter import TER
    hyp = "Die Kette Squire's berichtet, dass 30 Prozent planen."
    refs = ["Squire's, eine andere Kette, meldet, dass 30 Prozent planen."]
    expected = SacreTER(**options).corpus_score([hyp], [refs])
    ours = TER(**options)
    row = ours.checked_stats(refs, hyp)
    assert row == (expected.num_edits, expected.ref_length)
    assert ours.checked_score(row) == expected.score


def test_ter_on_a_whole_excerpt_with_two_references():
    metric = SacreTER()
    expected = metric.corpus_score(read_lines(DE_EN_HYP), [read_lines(p) for p in DE_EN_REFS])
    row = corpus_row("in-process", "ter", DE_EN_REFS, DE_EN_HYP)
    assert row["score"] == expected.score
    assert row["stats"][1] == expected.ref_length


@pytest.mark.slow
def test_ter_with_three_references_sums_fractional_lengths_as_sacrebleu(tmp_path):
    """Averages over three references are not exact doubles; the corpus sum must be
    sacrebleu's row-after-row sum, not numpy's pairwise one."""
    refs = [read_lines(path) for path in DE_EN_REFS]
    refs.append([" ".join(reversed(line.split())) for line in refs[0]])
    paths = []
    for number, lines in enumerate(refs):
        paths.append(tmp_path / f"ref{number}")
        paths[-1].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    expected = SacreTER().corpus_score(read_lines(DE_EN_HYP), refs)
    row = corpus_row("in-process", "ter", [str(path) for path in paths], DE_EN_HYP)
    assert row["stats"][1] == expected.ref_length and row["score"] == expected.score


JIWER_CASES = [
    ("", wer_default, cer_default),
    (" --lowercase --remove-punctuation",
     Compose([ToLowerCase(), RemovePunctuation(), wer_default]),
     Compose([ToLowerCase(), RemovePunctuation(), cer_default])),
]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("options, word_transform, char_transform", JIWER_CASES)
@pytest.mark.parametrize("refs, hyp", [(DE_EN_REFS[:1], DE_EN_HYP), (MULTI_REFS[1:], MULTI_HYP)],
                         ids=["de-en", "multi"])
def test_wer_and_cer_match_jiwer(mode, options, word_transform, char_transform, refs, hyp):
    references, hypotheses = read_lines(refs[0]), read_lines(hyp)
    words = corpus_row(mode, "wer" + options, refs, hyp)
    expected = process_words(references, hypotheses, word_transform, word_transform)
    assert words["stats"] == [expected.substitutions, expected.deletions, expected.insertions,
                              expected.hits + expected.substitutions + expected.deletions]
    assert words["score"] == pytest.approx(
        wer(references, hypotheses, word_transform, word_transform), abs=1e-12)
    chars = corpus_row(mode, "cer" + options, refs, hyp)
    assert chars["score"] == pytest.approx(
        cer(references, hypotheses, char_transform, char_transform), abs=1e-12)


def test_wer_splits_text_as_jiwer_does():
    from evalproto.evaluators.wer import WER
    text = " tab\tinside  two  spaces\n"
    assert WER().units(text) == wer_default([text])[0]


def test_wer_picks_the_reference_with_fewest_edits_and_the_first_on_ties():
    from evalproto.evaluators.wer import WER
    metric = WER()
    assert metric.stats(["a b c d e", "a b x"], "a b c") == [1, 0, 0, 3]
    assert metric.stats(["a b c d", "a b c e"], "a b c") == [0, 1, 0, 4]
    assert metric.stats(["x y", "a b"], "a c") == [1, 0, 0, 2]


def dynabench_accuracy(predictions, targets):
    """Dynabench's get_accuracy, with a hit on any of several targets."""
    hits = sum(p in t if isinstance(t, list) else p == t for p, t in zip(predictions, targets))
    return 100 * hits / len(targets)


@pytest.mark.parametrize("mode", MODES)
def test_exact_match_is_dynabench_accuracy(tmp_path, mode):
    refs_a, refs_b = read_lines(MULTI_REFS[0]), read_lines(MULTI_REFS[1])
    hyps = read_lines(MULTI_HYP)
    hyps[0], hyps[3] = refs_a[0], refs_b[3]  # a hit on reference A, one on B
    hyps[13] = refs_a[13].lower()  # a near miss
    (tmp_path / "hyp").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    row = corpus_row(mode, "exact-match", MULTI_REFS, str(tmp_path / "hyp"))
    expected = dynabench_accuracy(hyps, [list(pair) for pair in zip(refs_a, refs_b)])
    assert row["score"] == pytest.approx(expected, abs=1e-12)
    assert row["stats"] == [4, 15]  # also line 6, and line 9 (empty in A and the hypothesis)


def official_normalize(text):
    """SQuAD v1.1 evaluation's normalization: lowercase, drop punctuation, drop articles,
    fix whitespace (written here from the script's definition)."""
    text = "".join(char for char in text.lower() if char not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def official_f1(prediction, truth):
    predicted, expected = official_normalize(prediction).split(), official_normalize(truth).split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


SQUAD_CASES = [
    (["The Eiffel Tower"], "eiffel tower"),
    (["Denver Broncos", "The Denver Broncos!"], "the broncos of denver"),
    (["an apple a day"], "A day, an apple."),
    (["1,000 years"], "1000 years"),
    (["Paris"], ""),
    (["naïve café"], "Naïve Café"),
    (["a the an"], "an"),
    (["Saint-Étienne"], "saint étienne"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("measure", ["f1", "exact-match"])
def test_squad_matches_the_official_formulas(tmp_path, mode, measure):
    real_refs, real_hyps = read_lines(DE_EN_REFS[0])[:40], read_lines(DE_EN_REFS[1])[:40]
    cases = SQUAD_CASES + [([ref], hyp) for ref, hyp in zip(real_refs, real_hyps)]
    width = max(len(refs) for refs, _ in cases)
    paths = [tmp_path / f"ref{i}" for i in range(width)]
    for i, path in enumerate(paths):  # repeat the last reference where a case has fewer
        path.write_text("".join(refs[min(i, len(refs) - 1)] + "\n" for refs, _ in cases))
    (tmp_path / "hyp").write_text("".join(hyp + "\n" for _, hyp in cases))
    row = corpus_row(mode, f"squad --measure {measure}", [str(p) for p in paths],
                     str(tmp_path / "hyp"))
    f1 = [max(official_f1(hyp, ref) for ref in refs) for refs, hyp in cases]
    exact = [max(official_normalize(hyp) == official_normalize(ref) for ref in refs)
             for refs, hyp in cases]
    expected = 100 * sum(f1 if measure == "f1" else exact) / len(cases)
    assert row["score"] == pytest.approx(expected, abs=1e-9)
    assert row["stats"][1] == sum(exact) and row["stats"][2] == len(cases)


@pytest.mark.parametrize("mode", MODES)
def test_macro_f1_matches_scikit_learn(tmp_path, mode):
    labels = ["positive", "negative", "neutral", "mixed"]
    random = np.random.default_rng(7)
    gold = random.choice(labels[:3], size=300)  # "mixed" is never gold: F1 0 counts
    predicted = np.where(random.random(300) < 0.6, gold, random.choice(labels, size=300))
    (tmp_path / "gold").write_text("\n".join(gold) + "\n")
    (tmp_path / "pred").write_text("\n".join(predicted) + "\n")
    row = corpus_row(mode, "f1 --labels " + ",".join(labels), [str(tmp_path / "gold")],
                     str(tmp_path / "pred"))
    expected = f1_score(gold, predicted, labels=labels, average="macro", zero_division=0)
    assert row["score"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_a_label_outside_the_declared_set_is_an_error(tmp_path, mode):
    (tmp_path / "gold").write_text("yes\nno\n")
    (tmp_path / "pred").write_text("yes\nmaybe\n")
    name = "f1 --labels yes,no"
    flag, value = ("-m", name) if mode == "in-process" else (
        "-e", f"{script('f1-evaluator')} --labels yes,no")
    result = run_cli("corpus-score", str(tmp_path / "gold"), str(tmp_path / "pred"), flag, value)
    assert result.exit_code == 1
    assert "prediction 'maybe' is not one of the declared labels yes,no" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_combine_is_the_weighted_sum_of_its_parts(mode):
    refs = [read_lines(path) for path in DE_EN_REFS]
    hyps = read_lines(DE_EN_HYP)
    bleu = SacreBLEU(tokenize="intl").corpus_score(hyps, refs).score
    ter = SacreTER().corpus_score(hyps, refs).score
    spec = "combine 'bleu --tokenize intl=0.5' ter=-0.5"
    row = corpus_row(mode, spec, DE_EN_REFS, DE_EN_HYP)
    assert row["score"] == pytest.approx(0.5 * bleu - 0.5 * ter, abs=1e-9)
    assert len(row["stats"]) == 12
    assert row["signature"].startswith("nrefs:2|parts:bleu --tokenize intl=0.5,ter=-0.5|")
    assert "|bleu1.tok:intl|" in row["signature"] and "|ter2.case:lc|" in row["signature"]


def test_bad_combine_parts_are_explained():
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", "combine bleu")
    assert result.exit_code == 1
    assert ("a combine part is SPEC=WEIGHT with a finite number for WEIGHT, e.g. bleu=0.5; "
            "got 'bleu'" in result.output)


# -- the score of summed statistics, bit for bit, in float64 and in float32 ------------
# (sacrebleu scores bootstrap resamples from float32 sums, with float32 scalars)

def random_rows(metric, count, seed):
    """Summed statistics with zeros where they test the edge cases."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        if metric == "bleu":
            total = [rng.choice([0, rng.randint(1, 3000)]) for _ in range(4)]
            correct = [rng.randint(0, t) if rng.random() > 0.1 else 0 for t in total]
            rows.append([rng.randint(0, 3000), rng.randint(1, 3000), *correct, *total])
        elif metric == "chrf":
            row = []
            for _ in range(8):
                hyp, ref = rng.choice([0, rng.randint(1, 9000)]), rng.randint(0, 9000)
                row += [hyp, ref, rng.randint(0, min(hyp, ref))]
            rows.append(row)
        else:
            rows.append([rng.randint(0, 900), rng.choice([0, rng.randint(1, 1800) / 2])])
    return rows


@pytest.mark.parametrize("smooth", [("exp", None), ("floor", 0.2), ("add-k", 1), ("none", None)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bleu_scores_summed_statistics_as_sacrebleu(smooth, dtype):
    from evalproto.evaluators.bleu import BLEU
    method, value = smooth
    ours, theirs = BLEU(smooth_method=method, smooth_value=value), SacreBLEU(
        smooth_method=method, smooth_value=value)
    for row in random_rows("bleu", 400, 1):
        expected = theirs._compute_score_from_stats(np.array(row, dtype=dtype))
        vector = np.array(row, dtype=dtype)
        assert ours.score(vector) == expected.score
        assert ours.details(vector)["precisions"] == [float(p) for p in expected.precisions]
        assert ours.verbose_score(vector) == expected._verbose


@pytest.mark.parametrize("options", [dict(), dict(word_order=2, beta=3),
                                     dict(eps_smoothing=True, word_order=2)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_chrf_and_ter_score_summed_statistics_as_sacrebleu(options, dtype):
    from evalproto.evaluators.chrf import CHRF
    from evalproto.evaluators.ter import TER
    ours, theirs = CHRF(**options), SacreCHRF(**{"char_order": 6, **options})
    orders = 6 + options.get("word_order", 0)
    for row in random_rows("chrf", 400, 2):
        vector = np.array(row[:3 * orders], dtype=dtype)
        expected = theirs._compute_score_from_stats(vector).score
        score = ours.score(vector)
        assert score == expected and (dtype == np.float64 or type(score) is type(expected))
    for row in random_rows("ter", 400, 3):
        vector = np.array(row, dtype=dtype)
        expected = SacreTER()._compute_score_from_stats(vector).score
        score = TER().score(vector)
        assert score == expected and (dtype == np.float64 or type(score) is type(expected))
