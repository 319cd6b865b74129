"""meta-eval from files: mt-metrics-eval's score files (segment and system level), our
own metrics' sentence scores, Open-Assistant's rankings and labels; the Python API and
the command line; and every bad input, which names the file and the line (exit 1), or
is a usage error (exit 2)."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
import scipy.stats
from conftest import json_rows, run_cli

import evalproto
from evalproto.base.errors import InputError, UsageProblem

DATA = Path(__file__).parent / "data"
MQM = DATA / "mqm21"
HUMAN = str(MQM / "en-de.mqm.seg.score")
CHRF, BLEU = str(MQM / "en-de.chrf.seg.score"), str(MQM / "en-de.bleu.seg.score")
SYSTEMS = ["Facebook-AI", "HuaweiTSC", "Online-W", "UEdin"]
HYPS = [str(MQM / f"{system}.de") for system in SYSTEMS]
REFS = [str(MQM / "ref.A.de"), str(MQM / "ref.C.de")]
EXPORT = str(DATA / "oasst-rankings.jsonl")
REWARD, LENGTH = str(DATA / "oasst-reward.jsonl"), str(DATA / "oasst-length.jsonl")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


def meta_eval(*args):
    return run_cli("meta-eval", *args)


def values(result):
    assert result.exit_code == 0, result.output
    return {row["metric"]: row for row in json_rows(result.output)}


# -- score files ------------------------------------------------------------------------


def test_a_score_file_reads_systems_in_order_with_missing_scores():
    scores = evalproto.read_score_file(HUMAN)
    assert list(scores.by_system) == SYSTEMS
    assert all(len(values) == 50 for values in scores.by_system.values())
    facebook = scores.by_system["Facebook-AI"]
    assert facebook[:3] == [-0.0, -0.0, -5.0]
    assert facebook[41:50] == [None] * 9  # segments 52-60 were not rated
    assert scores.lines["HuaweiTSC"][0] == 51


def test_lines_of_systems_may_interleave(tmp_path):
    path = write(tmp_path, "h.score", "A\t1\nB\t5\nA 2\nB\tNone\nA\t3\nB\t4.5\n")
    scores = evalproto.read_score_file(path)
    assert scores.by_system == {"A": [1.0, 2.0, 3.0], "B": [5.0, None, 4.5]}
    assert scores.lines == {"A": [1, 3, 5], "B": [2, 4, 6]}


@pytest.mark.parametrize("text, message", [
    ("", "file is empty"),
    ("A\t1\n\nA\t2\n", "line 2: expected SYSTEM<TAB>SCORE .* found an empty line"),
    ("A\t1\nA B\t2\n", "line 2: .* found 3 fields"),
    ("A\t1\nA\n", "line 2: .* found 1 fields"),
    ("A\tnan\n", "line 1: the score of A is not a finite number: 'nan'"),
    ("A\t1,5\n", "line 1: the score of A is not a finite number"),
    ("A\t1e999\n", "line 1: the score of A overflows a double"),
    ("A\tnone\n", "line 1: the score of A is not a finite number: 'none'"),
    (b"A\t1\nB\xff\t2\n", "line 2: invalid UTF-8"),
])
def test_a_bad_score_file_is_an_error_naming_its_line(tmp_path, text, message):
    path = write(tmp_path, "bad.score", text)
    with pytest.raises(InputError, match=message) as found:
        evalproto.read_score_file(path)
    assert str(found.value).startswith(path)
    result = meta_eval(path, CHRF)
    assert result.exit_code == 1 and path in result.output


def test_a_system_without_any_human_score_is_left_out_and_extra_metric_systems_ignored():
    """System level: MQM rated 13 of the 25 systems that COMET scored; the COMET files
    also score the references, which the human file does not have."""
    human = evalproto.read_score_file(str(MQM / "en-de.mqm.sys.score"))
    comet = evalproto.read_score_file(str(MQM / "en-de.comet-refA.sys.score"))
    rated = [s for s, v in human.by_system.items() if v[0] is not None]
    assert len(rated) == 13 and "ref-B" in comet.by_system and "ref-B" not in human.by_system
    found = evalproto.meta_evaluate(human, {"COMET": comet}, "pearson")
    gold = [human.by_system[s][0] for s in rated]
    metric = [comet.by_system[s][0] for s in rated]
    assert found["COMET"].value == pytest.approx(scipy.stats.pearsonr(gold, metric)[0],
                                                 abs=1e-12)
    assert (found.systems, found.items, found.judged) == (13, 1, 13)
    pairs = list(itertools.combinations(zip(gold, metric), 2))
    agree = sum(np.sign(a[0] - b[0]) == np.sign(a[1] - b[1]) for a, b in pairs)
    accuracy = evalproto.meta_evaluate(human, {"COMET": comet}, "pairwise-accuracy")
    assert accuracy["COMET"].value == agree / len(pairs)


def test_system_level_files_on_the_command_line_with_a_test():
    result = meta_eval(str(MQM / "en-de.mqm.sys.score"), str(MQM / "en-de.comet-refA.sys.score"),
                       str(MQM / "en-de.comet-refC.sys.score"), "--statistic", "kendall",
                       "--perm-both", "300", "-f", "json")
    rows = values(result)
    assert set(rows) == {"en-de.comet-refA", "en-de.comet-refC"}
    for row in rows.values():
        assert set(row) == {"metric", "statistic", "average_by", "value", "p_values", "rank",
                            "cluster"}
        assert row["statistic"] == "kendall" and row["average_by"] == "none"


@pytest.mark.parametrize("human, metric, message", [
    ("A\t1\nA\t2\nB\t3\n", "A\t1\nA\t2\nB\t3\nB\t4\n", "h.score: system 'B' has 1 score but "
                                                      "'A' has 2"),
    ("A\t1\nB\t2\n", "A\t1\n", "m.score has no scores of system 'B', which .*h.score scores"),
    ("A\t1\nB\t2\n", "A\t1\nB\t2\nB\t3\n", "m.score: system 'B' has 2 scores but .*h.score "
                                           "has 1 per system"),
    ("A\t1\nA\t2\nB\t3\nB\t4\n", "A\t1\nB\t2\nA\tNone\nB\t4\n", "m.score: line 3: None, but a "
                                                             "metric needs a score"),
    ("A\tNone\nB\tNone\n", "A\t1\nB\t2\n", "every score is None"),
])
def test_tables_that_do_not_align_are_errors_naming_the_files(tmp_path, human, metric, message):
    human_path, metric_path = write(tmp_path, "h.score", human), write(tmp_path, "m.score", metric)
    result = meta_eval(human_path, metric_path)
    assert result.exit_code == 1
    assert re.search(message, result.output), result.output


def test_python_mappings_are_read_as_score_files_are():
    human = {"A": [1, 2, None, 4], "B": [2.5, 1, 3, float("nan")]}
    metric = {"A": [0.1, 0.4, 0.3, 0.9], "B": [0.5, 0.2, 0.8, 0.1], "ref": [1, 1, 1, 1]}
    found = evalproto.meta_evaluate(human, {"m": metric}, "spearman", "sys")
    expected = np.mean([scipy.stats.spearmanr([1, 2, 4], [0.1, 0.4, 0.9])[0],
                        scipy.stats.spearmanr([2.5, 1, 3], [0.5, 0.2, 0.8])[0]])
    assert found["m"].value == pytest.approx(expected, abs=1e-12)
    with pytest.raises(TypeError, match="not a number"):
        evalproto.meta_evaluate(human, {"m": {"A": ["1"] * 4, "B": [1] * 4}})
    with pytest.raises(ValueError, match="finite"):
        evalproto.meta_evaluate(human, {"m": {"A": [math.inf] * 4, "B": [1] * 4}})
    with pytest.raises(TypeError, match="mapping"):
        evalproto.meta_evaluate(human, [metric])


def test_score_files_and_mappings_give_the_same_values():
    human, chrf = evalproto.read_score_file(HUMAN), evalproto.read_score_file(CHRF)
    for statistic in ("kendall-like", "tau23", "pce"):
        from_files = evalproto.meta_evaluate(human, {"chrf": chrf}, statistic, threshold=1)
        from_dicts = evalproto.meta_evaluate(dict(human.by_system), {"chrf": chrf.by_system},
                                             statistic, threshold=1)
        assert from_files.to_dict() == from_dicts.to_dict()


# -- the command line's outputs -------------------------------------------------------------


def test_json_has_one_object_per_metric_best_first_with_the_asked_keys():
    rows = json_rows(meta_eval(HUMAN, CHRF, BLEU, "--statistic", "acc23-opt", "--average-by",
                               "item", "-f", "json").output)
    assert [row["metric"] for row in rows] == ["en-de.bleu", "en-de.chrf"]  # equal: by name
    assert rows[0]["value"] == rows[1]["value"]
    for row in rows:
        assert set(row) == {"metric", "statistic", "average_by", "value", "epsilon"}
        assert row["epsilon"] > 0
    # the value is acc23's with the chosen epsilon
    again = values(meta_eval(HUMAN, CHRF, "--statistic", "acc23", "--average-by", "item",
                             "--epsilon", repr(rows[1]["epsilon"]), "-f", "json"))
    assert again["en-de.chrf"]["value"] == rows[1]["value"]


def test_a_metric_given_twice_is_a_usage_error():
    result = meta_eval(HUMAN, CHRF, CHRF)
    assert result.exit_code == 2 and "two metrics are named 'en-de.chrf'" in result.output


def test_perm_both_on_the_command_line_is_the_apis_seeded_test():
    result = meta_eval(HUMAN, CHRF, BLEU, "--statistic", "pearson", "--perm-both", "1000",
                       "--seed", "1", "-f", "json")
    rows = values(result)
    chrf, bleu = rows["en-de.chrf"], rows["en-de.bleu"]
    assert (chrf["rank"], bleu["rank"]) == ([1, 1], [2, 2])
    assert (chrf["cluster"], bleu["cluster"]) == (1, 2)
    human = evalproto.read_score_file(HUMAN)
    from evalproto.readers.metascores import align
    from evalproto.stats import metaeval as me
    tables = align(human, {"chrf": evalproto.read_score_file(CHRF),
                           "bleu": evalproto.read_score_file(BLEU)})
    test = me.perm_both(tables.human, tables.metrics["bleu"], tables.metrics["chrf"],
                        me.Measure("pearson"), 1000, random=np.random.RandomState(1))
    assert chrf["p_values"] == {"en-de.bleu": test.p_value}
    assert bleu["p_values"] == {"en-de.chrf": test.reverse_p_value}
    assert chrf["p_values"]["en-de.bleu"] <= 0.05


def test_the_text_table_and_latex_show_the_same_figures():
    text = meta_eval(HUMAN, CHRF, BLEU, "--perm-both", "200", "--seed", "3").output
    rows = values(meta_eval(HUMAN, CHRF, BLEU, "--perm-both", "200", "--seed", "3", "-f", "json"))
    lines = text.splitlines()
    assert lines[0] == f"Human judgements: {HUMAN} (4 systems x 50 items, 164 judged)"
    assert lines[1] == "Statistic: pearson, averaged by none"
    header = lines[3].split()
    assert header == ["metric", "pearson", "rank", "p", ">en-de.chrf", "p", ">en-de.bleu"]
    chrf_line = lines[4].split()
    assert chrf_line[:3] == ["en-de.chrf", f"{rows['en-de.chrf']['value']:.4f}", "1"]
    assert chrf_line[3] == f"{rows['en-de.chrf']['p_values']['en-de.bleu']:.4f}"
    assert "seed 3" in text and "AssignRanks" in text
    latex = meta_eval(HUMAN, CHRF, BLEU, "--perm-both", "200", "--seed", "3", "-f",
                      "latex").output
    assert r"\begin{tabular}{lrrrr}" in latex and r"\toprule" in latex
    assert (rf"en-de.chrf & {rows['en-de.chrf']['value']:.4f} & 1 & -- & "
            rf"\textbf{{{rows['en-de.chrf']['p_values']['en-de.bleu']:.4f}}} \\") in latex


def test_latex_escapes_names(tmp_path):
    human = write(tmp_path, "h.score", "A\t1\nA\t2\nA\t3\n")
    metric = write(tmp_path, "m_1&co%.score", "A\t1\nA\t3\nA\t2\n")
    latex = meta_eval(human, metric, "-f", "latex").output
    assert r"m\_1\&co\% & 0.5000 \\" in latex


def test_the_output_is_written_to_a_file(tmp_path):
    out = tmp_path / "out.json"
    result = meta_eval(HUMAN, CHRF, "-f", "json", "-o", str(out))
    assert result.exit_code == 0 and result.output == ""
    assert json.loads(out.read_text())["metric"] == "en-de.chrf"


# -- our own metrics, scored in place ---------------------------------------------------------


def test_our_sentence_scores_are_sacrebleus(tmp_path):
    """-m chrf and -m bleu score each system's file against the references: the values
    equal those of score files of sacrebleu's sentence_chrf and sentence_bleu."""
    refs = [Path(path).read_text().splitlines() for path in REFS]
    for name, scorer in (("chrf", sacrebleu.sentence_chrf), ("bleu", sacrebleu.sentence_bleu)):
        lines = [f"{system}\t{scorer(hyp, [a, b]).score!r}"
                 for system, path in zip(SYSTEMS, HYPS)
                 for hyp, a, b in zip(Path(path).read_text().splitlines(), *refs)]
        expected = write(tmp_path, f"{name}.seg.score", "\n".join(lines) + "\n")
        assert Path(expected).read_text() == (MQM / f"en-de.{name}.seg.score").read_text()
    found = values(meta_eval(HUMAN, "-m", "chrf", "bleu", "--refs", *REFS, "--hyps", *HYPS,
                             "--statistic", "kendall", "--average-by", "item", "-f", "json"))
    from_files = values(meta_eval(HUMAN, CHRF, BLEU, "--statistic", "kendall",
                                  "--average-by", "item", "-f", "json"))
    assert found["chrf"]["value"] == from_files["en-de.chrf"]["value"]
    assert found["bleu"]["value"] == from_files["en-de.bleu"]["value"]


def test_own_metrics_and_files_together_and_systems_named_by_name_equals_file(tmp_path):
    renamed = [f"{system}={path}" for system, path in zip(SYSTEMS, HYPS)]
    found = values(meta_eval(HUMAN, BLEU, "-m", "chrf", "--refs", *REFS, "--hyps", *renamed,
                             "-f", "json"))
    assert set(found) == {"en-de.bleu", "chrf"}
    with_names = values(meta_eval(HUMAN, "-m", "chrf", "--refs", *REFS, "--hyps", *HYPS,
                                  "--names", ",".join(SYSTEMS), "-f", "json"))
    assert with_names["chrf"]["value"] == found["chrf"]["value"]


def test_an_evaluator_command_scores_as_the_same_metric_in_process():
    found = values(meta_eval(HUMAN, "-e", "chrf-evaluator", "-m", "chrf", "--refs", *REFS,
                             "--hyps", *HYPS, "-f", "json"))
    assert found["chrf-evaluator"]["value"] == found["chrf"]["value"]


def test_a_system_mismatch_names_both_files():
    result = meta_eval(HUMAN, "-m", "chrf", "--refs", *REFS, "--hyps", *HYPS[:3])
    assert result.exit_code == 1
    assert f"{HUMAN} scores the system 'UEdin', and none of the hypothesis files" in \
        result.output
    result = meta_eval(HUMAN, "-m", "chrf", "--refs", *REFS, "--hyps", *HYPS, REFS[0])
    assert result.exit_code == 1
    assert f"{REFS[0]}: its system 'ref.A' is not in {HUMAN}" in result.output


def test_hypotheses_of_another_length_are_an_error(tmp_path):
    short = [write(tmp_path, f"{s}.de", "".join(Path(p).read_text().splitlines(True)[:49]))
             for s, p in zip(SYSTEMS, HYPS)]
    refs = [write(tmp_path, f"ref{i}", "".join(Path(p).read_text().splitlines(True)[:49]))
            for i, p in enumerate(REFS)]
    result = meta_eval(HUMAN, "-m", "chrf", "--refs", *refs, "--hyps", *short)
    assert result.exit_code == 1
    assert f"{short[0]} has 49 lines, but {HUMAN} has 50 scores per system" in result.output
    result = meta_eval(HUMAN, "-m", "chrf", "--refs", *refs, "--hyps", *HYPS)
    assert result.exit_code == 1 and "has 49 lines but" in result.output


@pytest.mark.parametrize("args, message", [
    (["-m", "chrf", "--hyps", *HYPS], "give --refs"),
    (["-m", "chrf", "--refs", *REFS], "give --hyps"),
    (["--refs", *REFS, "--hyps", *HYPS], "are scored by our own metrics: name them (--metric)"),
    (["-m", "nosuchmetric", "--refs", *REFS, "--hyps", *HYPS], "nosuchmetric"),
    (["--names", "a,b"], "--names names the --hyps systems"),
    (["-m", "chrf", "--refs", *REFS, "--hyps", HYPS[0], HYPS[0].replace("Facebook-AI.de",
                                                                      "x/../Facebook-AI.de")],
     "two of --hyps are the system 'Facebook-AI'"),
])
def test_own_metrics_without_what_they_need_are_usage_errors(args, message):
    result = meta_eval(HUMAN, *args)
    assert result.exit_code == 2 and message in result.output, result.output


# -- usage errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    ([], "give metric score files after the human one"),
    ([CHRF, "--statistic", "pce", "--average-by", "item"], "--average-by must be none"),
    ([CHRF, "--epsilon", "0.5"], "--epsilon is the tie threshold of tau23 and acc23"),
    ([CHRF, "--statistic", "acc23", "--epsilon", "-1"], "--epsilon"),
    ([CHRF, "--statistic", "acc23", "--epsilon", "nan"], "--epsilon"),
    ([CHRF, "--statistic", "kendall-like", "--threshold", "0"], "--threshold"),
    ([CHRF, "--statistic", "acc23-opt", "--sample-rate", "0"], "--sample-rate"),
    ([CHRF, "--statistic", "acc23-opt", "--sample-rate", "1.5"], "--sample-rate"),
    ([CHRF, "--statistic", "kendal"], "--statistic"),
    ([CHRF, "--average-by", "segment"], "--average-by"),
    ([CHRF, "--perm-both", "10"], "--perm-both tests pairs of metrics"),
    ([CHRF, BLEU, "--perm-both", "-3"], "--perm-both"),
    ([CHRF, BLEU, "--perm-both", "10", "--block-size", "0"], "--block-size"),
    ([CHRF, "--pval", "2"], "--pval"),
    ([CHRF, "--label", "quality"], "--label names an Open-Assistant label"),
    ([CHRF, "-f", "tsv"], "--format"),
    ([CHRF, "-o", CHRF], "the output is one of the command's inputs"),
])
def test_impossible_requests_are_usage_errors(args, message):
    result = meta_eval(HUMAN, *args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_tie_calibration_over_too_many_pairs_asks_for_a_sample_rate(tmp_path):
    lines = "".join(f"S{s}\t{(i * 7 + s) % 11}\n" for s in range(8) for i in range(800))
    human, metric = write(tmp_path, "h.score", lines), write(tmp_path, "m.score", lines)
    result = meta_eval(human, metric, "--statistic", "acc23-opt")
    assert result.exit_code == 2
    assert "choose a --sample-rate of 0.976 or less, or average by item" in result.output


# -- Open-Assistant ----------------------------------------------------------------------------


def oasst(*args):
    return values(meta_eval("--data-format", "oasst", EXPORT, REWARD, LENGTH, *args, "-f",
                            "json"))


def test_pairwise_accuracy_over_sibling_replies_by_hand():
    """Sibling pairs: a1 > a2, a1 > a3, a2 > a3 (p1); b2 > b1 (p2); c1 > c2 (p3); d1 has
    no sibling, and c3 no rank. Reward: .9/.5, .9/.7, .5/.7, .3/.3 (a tie), .2/.6 ->
    2 of 5 agree. Length: 83/29, 83/51, 29/51, 57/35, 10/29 -> 3 of 5."""
    rows = oasst()
    assert rows["oasst-reward"]["value"] == 2 / 5
    assert rows["oasst-length"]["value"] == 3 / 5
    assert rows["oasst-reward"]["statistic"] == "pairwise-accuracy"
    assert rows["oasst-reward"]["average_by"] == "item"


def test_kendall_over_prompts_by_hand():
    """Reward: p1 tau = (2 - 1) / 3, p2 undefined (the scorer ties), p3 -1 -> -1/3.
    Length: p1 1/3, p2 +1, p3 -1 -> 1/9."""
    rows = oasst("--statistic", "kendall")
    assert rows["oasst-reward"]["value"] == pytest.approx(-1 / 3, abs=1e-15)
    assert rows["oasst-length"]["value"] == pytest.approx(1 / 9, abs=1e-15)


def test_correlation_with_a_label_over_the_replies_that_have_it():
    rows = oasst("--label", "quality")
    quality, reward, length = [0.75, 0.25, 0.5, 0.5], [0.9, 0.5, 0.7, 0.3], [83, 29, 51, 35]
    assert rows["oasst-reward"]["value"] == pytest.approx(
        scipy.stats.pearsonr(quality, reward)[0], abs=1e-12)
    assert rows["oasst-length"]["value"] == pytest.approx(
        scipy.stats.pearsonr(quality, length)[0], abs=1e-12)
    by_prompt = oasst("--label", "quality", "--statistic", "kendall", "--average-by", "item")
    assert by_prompt["oasst-reward"]["value"] == pytest.approx(
        scipy.stats.kendalltau([0.75, 0.25, 0.5], [0.9, 0.5, 0.7])[0], abs=1e-12)


def test_rankings_in_python_with_scores_in_a_mapping():
    replies = evalproto.read_oasst_replies(EXPORT)
    assert replies.prompts == ["p1", "p2", "p3", "p4"]
    assert replies.replies == [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2"], ["d1"]]
    assert replies.human == [[0, -1, -2], [-1, 0], [0, -1], [0]]
    scores = {"a1": 3, "a2": 2, "a3": 1, "b1": 0, "b2": 1, "c1": 1, "c2": 0, "d1": 5}
    found = evalproto.meta_evaluate(replies, {"oracle": scores, "reversed": {
        key: -value for key, value in scores.items()}}, perm_both=200)
    assert found["oracle"].value == 1.0 and found["reversed"].value == 0.0
    assert found["oracle"].rank == (1, 1) and found["reversed"].rank == (2, 2)
    assert str(found).startswith(f"Human judgements: {EXPORT} (8 judged replies to 4 "
                                 f"messages, at most 3 to one)")
    with pytest.raises(InputError, match="oracle: no score of the reply 'd1'"):
        evalproto.meta_evaluate(replies, {"oracle": {k: v for k, v in scores.items()
                                                     if k != "d1"}})


def test_zero_is_a_score_and_a_label_value(tmp_path):
    zeros = write(tmp_path, "zeros.jsonl", "".join(
        json.dumps({"message_id": key, "score": 0}) + "\n"
        for key in ("a1", "a2", "a3", "b1", "b2", "c1", "c2", "d1")))
    rows = values(meta_eval("--data-format", "oasst", EXPORT, zeros, REWARD, "--label", "spam",
                            "-f", "json"))
    # every spam value is 0.0: a constant row has no Pearson correlation, averaged as 0
    assert rows["zeros"]["value"] == rows["oasst-reward"]["value"] == 0
    assert values(meta_eval("--data-format", "oasst", EXPORT, zeros, "-f", "json"))[
        "zeros"]["value"] == 0  # every pair of replies is a scorer's tie


def test_a_tree_without_parent_ids_takes_its_parents_from_the_tree(tmp_path):
    text = Path(EXPORT).read_text().replace('"parent_id": "p1", ', "")
    replies = evalproto.read_oasst_replies(write(tmp_path, "e.jsonl", text))
    assert replies.replies[0] == ["a1", "a2", "a3"] and replies.prompts[0] == "p1"


@pytest.mark.parametrize("args, message", [
    (["--average-by", "none"], "--average-by must be item"),
    (["--average-by", "sys"], "--average-by must be item"),
    (["--label", "quality", "--average-by", "sys"], "--average-by must be item or none"),
    (["--statistic", "pce"], "pce compares systems"),
    (["-m", "chrf", "--refs", *REFS, "--hyps", *HYPS], "not by our own --metric"),
])
def test_rankings_refuse_what_compares_across_prompts(args, message):
    result = meta_eval("--data-format", "oasst", EXPORT, REWARD, *args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_an_export_alone_is_a_usage_error():
    result = meta_eval("--data-format", "oasst", EXPORT)
    assert result.exit_code == 2 and "after the export" in result.output


def reply_row(**fields):
    row = {"message_id": "r1", "parent_id": "q", "role": "assistant", "text": "x", "rank": 0}
    row.update(fields)
    return json.dumps(row)


@pytest.mark.parametrize("lines, message", [
    ([reply_row(rank=-1)], "line 1: a reply's 'rank' must be a whole number >= 0"),
    ([reply_row(rank="0")], "line 1: a reply's 'rank' must be a whole number"),
    ([reply_row(rank=True)], "line 1: a reply's 'rank' must be a whole number"),
    ([reply_row(), reply_row(rank=1)], "line 2: message 'r1' appears again .first on line 1."),
    ([reply_row(parent_id=None)], "line 1: the reply 'r1' has no 'parent_id'"),
    ([reply_row(message_id=7)], "line 1: an assistant message needs a string 'message_id'"),
    ([reply_row(rank=None)], "no assistant reply has a rank"),
    (["{not json"], "line 1: not JSON"),
    (['{"thread": 3}'], "line 1: 'thread' must be a list of message objects"),
])
def test_a_bad_export_is_an_error_naming_its_line(tmp_path, lines, message):
    export = write(tmp_path, "export.jsonl", "\n".join(lines) + "\n")
    scores = write(tmp_path, "s.jsonl", '{"message_id": "r1", "score": 1}\n')
    result = meta_eval("--data-format", "oasst", export, scores)
    assert result.exit_code == 1
    assert re.search(f"{export}: {message}" if "line" in message else message,
                                   result.output), result.output


def test_a_missing_label_says_which_labels_there_are():
    result = meta_eval("--data-format", "oasst", EXPORT, REWARD, "--label", "qualty")
    assert result.exit_code == 1
    assert "no assistant reply has the label 'qualty' (labels found: quality, spam)" in \
        result.output


@pytest.mark.parametrize("lines, message", [
    (['{"message_id": "a1", "score": 1}'], "no score of the reply 'a2', which .* judges .nor of "
                                           "6 more."),
    (['{"message_id": "zz", "score": 1}'], "line 1: message 'zz' is not in"),
    (['{"message_id": "a1", "score": 1}', '{"message_id": "a1", "score": 2}'],
     "line 2: a second score of 'a1' .the first is on line 1."),
    (['{"message_id": "a1", "score": "high"}'], "line 1: the score of 'a1' must be a finite "
                                                "number"),
    (['{"message_id": "a1", "score": true}'], "line 1: the score of 'a1' must be a finite"),
    (['{"message_id": "a1", "score": 1e999}'], "line 1: not JSON: Number out of range"),
    (['{"id": "a1", "score": 1}'], "line 1: expected .*message_id"),
    (['[1, 2]'], "line 1: expected a JSON object"),
])
def test_bad_message_scores_are_errors_naming_the_line(tmp_path, lines, message):
    scores = write(tmp_path, "scores.jsonl", "\n".join(lines) + "\n")
    result = meta_eval("--data-format", "oasst", EXPORT, scores)
    assert result.exit_code == 1
    assert re.search(message, result.output) and scores in result.output, \
        result.output


def test_a_label_that_is_not_a_number_is_an_error(tmp_path):
    text = Path(EXPORT).read_text().replace('"quality": {"value": 0.25',
                                            '"quality": {"value": "x"')
    export = write(tmp_path, "e.jsonl", text)
    result = meta_eval("--data-format", "oasst", export, REWARD, "--label", "quality")
    assert result.exit_code == 1
    assert f"{export}: line 1: the label 'quality' must hold a finite 'value'" in result.output


# -- Williams' test -----------------------------------------------------------------------------


def test_williams_test_from_python():
    human = {"A": [1, 2, 3, 4, 5]}
    p, r1, r2 = evalproto.williams_test(human, {"A": [1.1, 2, 3.1, 4, 5.1]},
                                        {"A": [1.5, 2, 3.1, 4, 5.5]})
    assert (p, r1, r2) == pytest.approx((0.019, 0.999, 0.987), abs=5e-4)
    with pytest.raises(UsageProblem, match="Williams"):
        evalproto.williams_test(human, {"A": [1, 2, 3, 4, 5]}, {"A": [1, 2, 3, 4, 5]},
                                "acc23-opt")


def test_the_command_lines_statistics_are_the_apis():
    from evalproto.cli.main import META_STATISTICS
    assert set(META_STATISTICS) == set(evalproto.META_STATISTICS)
