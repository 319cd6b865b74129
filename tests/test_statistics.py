"""Confidence intervals and paired tests against sacrebleu's own, on real text; groups;
sentence-level scores; and chunked resampling that keeps sacrebleu's random draws."""

import numpy as np
import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_HYP2,
    DE_EN_REFS,
    EN_DE_HYP,
    EN_DE_REFS,
    json_rows,
    read_lines,
    run_cli,
)
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER
from sacrebleu.significance import PairedTest

from evalproto.stats import resampling
from evalproto.stats.table import group_rows, rows_by_key

PAIRS = {"de-en": (DE_EN_REFS, [DE_EN_HYP, DE_EN_HYP2]),
         "en-de": (EN_DE_REFS, [EN_DE_HYP, EN_DE_REFS[0].replace("ref.A", "hyp.JDExploreAcademy")])}
# sacrebleu sums each bootstrap resample in float32 and scores it with float32 scalars
# (under NumPy 2, its chrF and TER come out in float32, BLEU's precisions too): so do we,
# and every mean, interval and p-value below is sacrebleu's to the bit.
METRICS = {"bleu": SacreBLEU, "chrf": SacreCHRF}


def rows_of(args):
    result = run_cli("corpus-score", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("metric", METRICS)
def test_confidence_interval_matches_sacrebleu(pair, metric):
    refs, (hyp, _) = PAIRS[pair]
    expected = METRICS[metric]().corpus_score(read_lines(hyp), [read_lines(p) for p in refs],
                                              n_bootstrap=1000)
    (row,) = rows_of([*refs, hyp, "-m", metric, "--confidence"])
    assert (row["score"], row["mean"], row["ci"]) == (expected.score, expected._mean,
                                                      expected._ci)
    assert row["signature"].startswith("nrefs:2|bs:1000|seed:12345|")


def excerpt(tmp_path, paths, lines=40):
    """The first lines of each file (sacrebleu's TER is slow), copied into tmp_path."""
    copies = []
    for path in paths:
        copies.append(tmp_path / path.rsplit("/", 1)[-1])
        copies[-1].write_text("".join(line + "\n" for line in read_lines(path)[:lines]))
    return [str(copy) for copy in copies]


@pytest.mark.parametrize("references", [2, 3])
def test_ter_confidence_interval_matches_sacrebleu(tmp_path, references):
    """With three references the average lengths are not exact in float32, and the
    resamples are summed in sacrebleu's own draw order."""
    refs = excerpt(tmp_path, [*DE_EN_REFS, EN_DE_REFS[0]][:references])
    (hyp,) = excerpt(tmp_path, [DE_EN_HYP])
    expected = SacreTER().corpus_score(read_lines(hyp), [read_lines(p) for p in refs],
                                       n_bootstrap=300)
    (row,) = rows_of([*refs, hyp, "-m", "ter", "--confidence", "--confidence-n", "300"])
    assert (row["score"], row["mean"], row["ci"]) == (expected.score, expected._mean,
                                                      expected._ci)


def sacrebleu_paired(pair, test_type, samples):
    refs, hyps = PAIRS[pair]
    references = [read_lines(p) for p in refs]
    metrics = {"BLEU": SacreBLEU(references=references),
               "chrF2": SacreCHRF(references=references)}
    _, scores = PairedTest([(h, read_lines(h)) for h in hyps], metrics, references=None,
                           test_type=test_type, n_samples=samples)()
    return scores


@pytest.mark.parametrize("pair", PAIRS)
def test_paired_bootstrap_matches_sacrebleu(pair):
    refs, hyps = PAIRS[pair]
    expected = sacrebleu_paired(pair, "bs", 1000)
    rows = rows_of([*refs, "-i", hyps[0], "-i", hyps[1], "-m", "bleu", "-m", "chrf",
                    "--paired-bs"])
    for row, sacre_name in zip(rows, ["BLEU", "chrF2", "BLEU", "chrF2"]):
        reference = expected[sacre_name][hyps.index(row["system"])]
        assert (row["score"], row["mean"], row["ci"]) == (reference.score, reference.mean,
                                                          reference.ci)
        assert row.get("p_value") == reference.p_value  # None for the baseline
    assert rows[0]["baseline"] is True and "baseline" not in rows[2]


def test_paired_bootstrap_of_three_systems_in_one_pass_matches_sacrebleu():
    """Every system is resampled in one pass over the same draws; sacrebleu resamples
    each pair anew from the same seed: the same figures."""
    refs, systems = DE_EN_REFS[:1], [DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS[1]]
    references = [read_lines(p) for p in refs]
    metrics = {"BLEU": SacreBLEU(references=references),
               "chrF2": SacreCHRF(references=references)}
    _, expected = PairedTest([(h, read_lines(h)) for h in systems], metrics, references=None,
                             test_type="bs", n_samples=500)()
    rows = rows_of([*refs, "-i", *systems, "-m", "bleu", "-m", "chrf", "--paired-bs",
                    "--paired-bs-n", "500"])
    assert len(rows) == 6
    for row, sacre_name in zip(rows, ["BLEU", "chrF2"] * 3):
        reference = expected[sacre_name][systems.index(row["system"])]
        assert (row["score"], row["mean"], row["ci"], row.get("p_value")) == (
            reference.score, reference.mean, reference.ci, reference.p_value)


@pytest.mark.parametrize("pair", PAIRS)
def test_approximate_randomization_matches_sacrebleu(pair):
    refs, hyps = PAIRS[pair]
    expected = sacrebleu_paired(pair, "ar", 2000)
    rows = rows_of([*refs, "-i", hyps[0], "-i", hyps[1], "-m", "bleu", "-m", "chrf",
                    "--paired-ar", "--paired-ar-n", "2000"])
    assert rows[2]["p_value"] == expected["BLEU"][1].p_value
    assert rows[3]["p_value"] == expected["chrF2"][1].p_value
    assert rows[2]["signature"].startswith("nrefs:2|ar:2000|seed:12345|")


def test_paired_tests_over_the_protocol_give_the_same_figures():
    """The scores and p-values are equal. In process, BLEU scores bootstrap resamples with
    sacrebleu's float32 precisions; over the pipe an evaluator scores the EVAL numbers it
    reads, in float64: their means and intervals differ in the eighth digit."""
    refs, hyps = PAIRS["de-en"]
    args = [*refs, "-i", hyps[0], "-i", hyps[1], "--paired-bs", "--paired-bs-n", "200"]
    in_process = rows_of([*args, "-m", "bleu"])
    over_pipe = rows_of([*args, "-e", "bleu-evaluator"])
    for ours, theirs in zip(in_process, over_pipe):
        assert (ours["score"], ours.get("p_value")) == (theirs["score"], theirs.get("p_value"))
        assert ours["mean"] == pytest.approx(theirs["mean"], rel=1e-7)
        assert ours["ci"] == pytest.approx(theirs["ci"], rel=1e-5)


def test_seeds_change_the_draws_and_none_is_unseeded():
    refs, (hyp, _) = PAIRS["de-en"]
    seeded = [rows_of([*refs, hyp, "--confidence", "--seed", seed])[0] for seed in ("1", "2")]
    assert seeded[0]["ci"] != seeded[1]["ci"]
    (unseeded,) = rows_of([*refs, hyp, "--confidence", "--seed", "none"])
    assert "|seed:none|" in unseeded["signature"]


@pytest.mark.parametrize("args, message", [
    (["--paired-bs"], "paired tests compare systems"),
    (["-i", DE_EN_HYP2, "--paired-bs", "--paired-ar"], "choose one of --paired-bs, --paired-ar"),
    (["-i", DE_EN_HYP2, "--paired-ar", "--paired-ttest"], "and --paired-ttest"),
    (["--seed", "abc"], "expected a whole number >= 0 or 'none'"),
    (["--sentence-level", "--confidence"], "does not combine"),
])
def test_analysis_usage_errors(args, message):
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, *args)
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize("samples, n", [(1000, 150), (70, 3), (5, 1)])
def test_chunked_bootstrap_draws_are_sacrebleus(monkeypatch, samples, n):
    monkeypatch.setattr(resampling, "_MAX_COUNTS", 64)  # many small chunks
    picks = np.random.default_rng(12345).choice(n, size=(samples, n), replace=True)
    expected = np.stack([np.bincount(row, minlength=n) for row in picks])
    counts = np.concatenate([chunk.copy()  # the next chunk overwrites it
                             for chunk in resampling.bootstrap_counts(n, samples, 12345)])
    assert np.array_equal(counts, expected)


def test_chunked_approximate_randomization_draws_are_sacrebleus(monkeypatch):
    monkeypatch.setattr(resampling, "_VALUES_PER_CHUNK", 64)
    n, trials = 37, 250
    baseline = np.random.default_rng(0).integers(0, 20, size=(n, 3)).astype(float)
    system = np.random.default_rng(1).integers(0, 20, size=(n, 3)).astype(float)
    swap = np.random.default_rng(9).integers(2, size=(trials, n), dtype=bool)

    def first_column(sums):
        return {"x": sums[:, 0].copy()}

    expected_differences = np.abs((swap @ baseline + ~swap @ system)[:, 0]
                                  - (~swap @ baseline + swap @ system)[:, 0])
    observed = abs(baseline[:, 0].sum() - system[:, 0].sum())
    result = resampling.approximate_randomization(baseline, system, first_column, trials, 9)
    assert result["x"].p_value == resampling.p_value(expected_differences, observed)


def test_groups_partition_the_corpus(tmp_path):
    groups = tmp_path / "groups"
    tags = ["news" if i % 3 else "web" for i in range(150)]
    groups.write_text("".join(f"{tag},all\n" if i % 2 else f"{tag}\n"
                              for i, tag in enumerate(tags)))
    rows = rows_of([*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "--groups", str(groups)])
    corpus, *by_group = rows
    assert "group" not in corpus
    assert [row["group"] for row in by_group] == ["web", "news", "all"]
    news, web = by_group[1], by_group[0]
    assert news["n"] + web["n"] == corpus["n"] == 150
    assert [a + b for a, b in zip(news["stats"], web["stats"])] == corpus["stats"]
    assert by_group[2]["n"] == 75
    # a group's score is the score of its own segments, as if they were the whole corpus
    keep = [i for i, tag in enumerate(tags) if tag == "web"]
    refs = [[read_lines(p)[i] for i in keep] for p in DE_EN_REFS]
    hyps = [read_lines(DE_EN_HYP)[i] for i in keep]
    assert web["score"] == pytest.approx(SacreBLEU().corpus_score(hyps, refs).score, abs=1e-9)


def test_groups_get_confidence_intervals_in_text_and_json(tmp_path):
    groups = tmp_path / "groups"
    groups.write_text("".join("a\n" if i < 100 else "b\n" for i in range(150)))
    rows = rows_of([*DE_EN_REFS, DE_EN_HYP, "--groups", str(groups), "--confidence",
                    "--confidence-n", "100"])
    assert all("ci" in row for row in rows) and rows[1]["ci"] != rows[2]["ci"]
    text = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--groups", str(groups)).output
    assert "Group: a" in text and "Group: b" in text


def test_a_groups_file_of_the_wrong_length_is_named(tmp_path):
    groups = tmp_path / "groups"
    groups.write_text("a\nb\n")
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--groups", str(groups))
    assert result.exit_code == 1
    assert f"{groups} has 2 lines but there are 150 segments" in result.output


@pytest.mark.parametrize("spec, metric", [
    ("bleu", SacreBLEU(effective_order=True)),  # as sacrebleu's -sl turns it on
    ("bleu --effective-order", SacreBLEU(effective_order=True)),
    ("bleu -tok intl -s floor", SacreBLEU(tokenize="intl", smooth_method="floor",
                                          effective_order=True)),
    ("chrf", SacreCHRF()), ("chrf -cw 2", SacreCHRF(word_order=2)), ("ter", SacreTER())])
def test_sentence_level_scores_are_sacrebleus_sentence_scores(spec, metric):
    rows = rows_of([*DE_EN_REFS, DE_EN_HYP, "-m", spec, "--sentence-level"])
    refs = list(zip(*(read_lines(p) for p in DE_EN_REFS)))
    assert [row["segment"] for row in rows] == [str(i) for i in range(1, 151)]
    for row, segment_refs, hyp in zip(rows, refs, read_lines(DE_EN_HYP)):
        assert row["score"] == metric.sentence_score(hyp, list(segment_refs)).score
    assert rows[0]["signature"].rsplit("|version:", 1)[0] == "|".join(
        metric.get_signature().format().split("|")[:-1])
    assert {row["name"] for row in rows} == {metric.corpus_score([""], [[""]]).name}


def test_a_short_sentence_scores_as_in_sacrebleu_not_zero(tmp_path):
    """Without effective order, a sentence of fewer than four words has no 4-grams and
    scores 0; sacrebleu's -sl prints 100 for an exact match."""
    (tmp_path / "ref").write_text("a cat\n")
    text = run_cli("corpus-score", str(tmp_path / "ref"), str(tmp_path / "ref"), "-sl").output
    assert text.splitlines()[1].split("\t")[2] == "100.0"
    assert "bleu: nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:" in text


def test_rows_by_key_gives_each_keys_rows_in_order_of_first_appearance():
    found = rows_by_key(["b", 1, "a", "b", None, 1, True])
    assert list(found) == ["b", 1, "a", None]  # True == 1, as in a dict
    assert {key: rows.tolist() for key, rows in found.items()} == {
        "b": [0, 3], 1: [1, 5, 6], "a": [2], None: [4]}


def test_group_rows_counts_a_tag_once_per_segment():
    found = group_rows([["x"], ["y", "x"], [], ["x", "x"]])
    assert {tag: rows.tolist() for tag, rows in found.items()} == {"x": [0, 1, 3], "y": [1]}
    assert list(found) == ["x", "y"]


def test_column_sums_add_row_after_row_as_sacrebleu_does():
    """sacrebleu sums statistics one segment after another; numpy's pairwise summation
    of a column differs in the last bits for fractional values (TER's averages)."""
    from evalproto.stats.resampling import column_sums
    thirds = (np.random.default_rng(5).integers(1, 40, size=10_000) / 3).tolist()
    expected = 0
    for value in thirds:
        expected += value
    assert float(np.asarray(thirds).sum()) != expected  # the difference is real
    for width in (1, 2, 5):
        rows = np.column_stack([thirds] * width)
        assert column_sums(rows).tolist() == [expected] * width
        assert column_sums(np.asfortranarray(rows)).tolist() == [expected] * width


def test_one_product_for_all_systems_equals_each_systems_own_on_whole_quarters():
    """The systems share one product only where every sum is exact: there it equals
    each system's own product, bit for bit; thirds are not taken as exact."""
    rng = np.random.default_rng(4)
    systems = [rng.integers(0, 400, size=(9000, 10)) / 4 for _ in range(3)]
    counts = rng.integers(0, 5, size=(7, 9000)).astype(np.uint8)
    together = resampling._products(counts, systems, together=True)
    alone = resampling._products(counts, systems, together=False)
    assert all(np.array_equal(a, b) for a, b in zip(together, alone))
    assert all(resampling._exact_sums(rows, resampling.FLOAT64_EXACT) for rows in systems)
    assert not resampling._exact_sums(systems[0][:, :3] / 3 + 1 / 3, resampling.FLOAT64_EXACT)
    assert not resampling._exact_sums(np.full((4, 1), 2.0 ** 52), resampling.FLOAT64_EXACT)
