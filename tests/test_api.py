"""The public Python API against sacrebleu on real text, against corpus-score, and on the
mistakes a caller makes (a string where a list belongs, sacrebleu's layout passed as
refs, unknown options): each is a TypeError or ValueError that says what was expected."""

import collections
import doctest
import inspect
import json
import sys

import numpy as np
import pytest
import sacrebleu
from conftest import DATA, DE_EN_REFS, json_rows, read_lines, run_cli

import evalproto
import evalproto.api.scoring
from evalproto.api.files import file_stats
from evalproto.api.scoring import score_corpus

STREAMS = [read_lines(path) for path in DE_EN_REFS]
HYPS = read_lines(str(DATA / "de-en.hyp.LT22.en"))
OTHER = read_lines(str(DATA / "de-en.hyp.Lan-Bridge.en"))
REFS = [list(segment) for segment in zip(*STREAMS)]
THEIRS = {"bleu": sacrebleu.BLEU, "chrf": sacrebleu.CHRF, "ter": sacrebleu.TER}


@pytest.mark.slow
@pytest.mark.parametrize("spec, options", [("bleu", {}), ("bleu", {"tokenize": "intl"}),
                                           ("bleu", {"lowercase": True, "max_ngram_order": 3}),
                                           ("chrf", {}), ("chrf", {"word_order": 2}),
                                           ("ter", {}), ("ter", {"normalized": True})])
def test_corpus_scores_equal_sacrebleus_in_both_layouts(spec, options):
    theirs = THEIRS[spec](**options).corpus_score(HYPS, STREAMS)
    metric = evalproto.load(spec, **options)
    for score in (metric.corpus_score(HYPS, REFS), metric.corpus_score(HYPS, ref_streams=STREAMS)):
        assert score.score == theirs.score
        assert str(score) == str(theirs)
        assert score.n == len(HYPS)
    assert score.signature.startswith("nrefs:2|")


@pytest.mark.parametrize("spec", ["bleu", "chrf"])
def test_references_per_segment_may_be_any_sequences(spec):
    """Lists and tuples of references are scored as given, other sequences as lists of
    their items: every form gives sacrebleu's score."""
    hyps, refs = HYPS[:300], REFS[:300]
    theirs = THEIRS[spec]().corpus_score(hyps, [stream[:300] for stream in STREAMS])
    metric = evalproto.load(spec)
    for given in (refs, tuple(tuple(segment) for segment in refs),
                  [tuple(segment) if i % 2 else segment for i, segment in enumerate(refs)],
                  [collections.UserList(segment) for segment in refs]):
        score = metric.corpus_score(hyps, given)
        assert (score.score, str(score), score.signature) == \
            (theirs.score, str(theirs), metric.corpus_score(hyps, refs).signature)


def test_options_as_keywords_and_as_words_are_the_same_metric():
    by_keyword = evalproto.load("bleu", tokenize="intl", lowercase=True)
    by_words = evalproto.load("bleu --tokenize intl -lc")
    assert by_keyword.signature == by_words.signature
    assert "tok:intl" in by_keyword.signature and "case:lc" in by_keyword.signature
    assert (by_keyword.corpus_score(HYPS, REFS).score
            == by_words.corpus_score(HYPS, REFS).score
            == sacrebleu.BLEU(tokenize="intl", lowercase=True).corpus_score(HYPS, STREAMS).score)


def test_bleu_details_are_sacrebleus_bleuscore_fields():
    theirs = sacrebleu.BLEU().corpus_score(HYPS, STREAMS)
    score = evalproto.load("bleu").corpus_score(HYPS, REFS)
    assert score.details == {"precisions": theirs.precisions, "bp": theirs.bp,
                             "ratio": theirs.ratio, "sys_len": theirs.sys_len,
                             "ref_len": theirs.ref_len}
    assert score.stats["hyp_len"] == theirs.sys_len and score.stats["ref_len"] == theirs.ref_len
    record = json.loads(json.dumps(score.to_dict()))
    assert record["score"] == theirs.score and record["name"] == "BLEU"
    assert record["verbose_score"] == str(theirs).split(" ", 3)[3]


@pytest.mark.parametrize("spec", ["bleu", "chrf", "ter"])
def test_sentence_scores_are_sacrebleus(spec):
    """BLEU scores a sentence with effective order, as sacrebleu's -sl does and its
    sentence_score recommends; short segments are where it matters."""
    theirs = THEIRS[spec](**({"effective_order": True} if spec == "bleu" else {}))
    hyps, refs = HYPS + ["Yes.", ""], REFS + [["Yes, indeed."], ["Nothing."]]
    expected = [theirs.sentence_score(hyp, segment).score for hyp, segment in zip(hyps, refs)]
    scores = evalproto.load(spec).sentence_scores(hyps, refs)
    assert isinstance(scores, np.ndarray) and scores.tolist() == expected


def test_a_command_that_speaks_the_protocol_is_the_same_metric():
    with evalproto.load(command="bleu-evaluator -lc") as process:
        assert process.corpus_score(HYPS, REFS).score == \
            evalproto.load("bleu", lowercase=True).corpus_score(HYPS, REFS).score
        assert process.signature == evalproto.load("bleu -lc").signature


def test_jobs_give_the_same_rows():
    with evalproto.load("chrf", jobs=2) as pooled:
        rows = pooled.stats_table(HYPS, REFS).rows["system"]
    assert np.array_equal(rows, evalproto.load("chrf").stats_table(HYPS, REFS).rows["system"])


def test_a_stats_table_reduces_as_the_corpus_score_does():
    metric = evalproto.load("bleu")
    table = metric.stats_table(HYPS, REFS)
    assert table.score() == metric.corpus_score(HYPS, REFS).score
    assert metric.score_stats(table.rows["system"]).score == table.score()
    assert len(table.bootstrap(50)) == 50
    mean, half_width = table.confidence_interval(100)
    theirs = sacrebleu.BLEU().corpus_score(HYPS, STREAMS, n_bootstrap=100)
    assert f"{mean:.1f} ± {half_width:.1f}" == f"{theirs._mean:.1f} ± {theirs._ci:.1f}"


def test_a_summed_vector_is_scored_as_given_and_a_bad_shape_is_explained():
    """A 1-D vector, the natural input, raised a bare IndexError."""
    metric = evalproto.load("bleu")
    rows = metric.stats_table(HYPS, REFS).rows["system"]
    assert metric.score_stats(rows.sum(axis=0)).score == metric.score_stats(rows).score
    assert metric.score_stats(list(rows[0])).score == metric.score_stats(rows[:1]).score
    for bad, shape in (([1, 2, 3], "shape \\(3,\\)"),
                       (np.zeros((2, 2, 10)), "shape \\(2, 2, 10\\)"),
                       ([[1] * 10, [1] * 9], "rows of unequal lengths")):
        with pytest.raises(ValueError, match=f"bleu takes statistics as an \\(n, 10\\) array of "
                                             f"rows or one vector of 10 numbers .*; got {shape}"):
            metric.score_stats(bad)


def test_statistics_that_are_not_numbers_are_named_by_their_row():
    """NaN was said to 'add up beyond the largest number a double holds'."""
    rows = np.ones((3, 10))
    rows[1, 4] = np.nan
    with pytest.raises(evalproto.EvalprotoError, match="row 2: the statistic correct_3 is nan, "
                                                       "not a finite number"):
        evalproto.load("bleu").score_stats(rows)


def test_every_function_that_asks_for_metrics_takes_their_names(tmp_path):
    """report_corpus(corpus, ["bleu", "chrf"]) raised AttributeError: 'str' object has no
    attribute 'build', while compare() took names."""
    corpus = evalproto.read_corpus(DE_EN_REFS, [str(DATA / "de-en.hyp.LT22.en")])
    report = evalproto.report_corpus(corpus, ["bleu", "chrf"],
                                     evalproto.ReportOptions(samples=20))
    assert [metric.label for metric in report.metrics] == ["bleu", "chrf"]
    named = evalproto.score_files(DE_EN_REFS, [str(DATA / "de-en.hyp.LT22.en")], ["bleu"],
                                  evalproto.Analysis())
    assert named.results[0].score == evalproto.load("bleu").corpus_score(HYPS, REFS).score
    with evalproto.load("chrf") as chrf:
        mixed = score_corpus(corpus, ["bleu", evalproto.MetricSpec("in-process", "ter"), chrf],
                             evalproto.Analysis())
    assert [result.metric for result in mixed.results] == ["bleu", "ter", "chrf"]
    columns, _, _ = file_stats(DE_EN_REFS, str(DATA / "de-en.hyp.LT22.en"), ["bleu"])
    assert columns[0].spec == "bleu"
    with pytest.raises(TypeError, match="metrics must be a list of metric specs"):
        evalproto.report_corpus(corpus, "bleu")


def test_compare_gives_corpus_scores_figures():
    comparison = evalproto.compare({"LT22": HYPS, "Lan-Bridge": OTHER}, REFS,
                                   metrics=["bleu", "chrf"], confidence=True, paired="bs")
    hyp_paths = [str(DATA / "de-en.hyp.LT22.en"), str(DATA / "de-en.hyp.Lan-Bridge.en")]
    cli = json_rows(run_cli("corpus-score", *DE_EN_REFS, "-i", *hyp_paths, "-m", "bleu",
                            "-m", "chrf", "--paired-bs", "-f", "json").output)
    api = comparison.to_dict()
    keys = ["metric", "score", "mean", "ci", "p_value", "signature", "n", "stats"]
    assert [{key: row.get(key) for key in keys} for row in api] == \
        [{key: row.get(key) for key in keys} for row in cli]
    assert [row["system"] for row in api] == ["LT22", "LT22", "Lan-Bridge", "Lan-Bridge"]
    frame = comparison.to_pandas()
    assert list(frame["system"]) == ["LT22", "LT22", "Lan-Bridge", "Lan-Bridge"]
    assert frame["p_value"].iloc[2] == cli[2]["p_value"] and frame["baseline"].iloc[0]


def test_compare_takes_a_list_of_systems_and_loaded_metrics():
    bleu = evalproto.load("bleu", tokenize="intl")
    comparison = evalproto.compare([HYPS, OTHER], ref_streams=STREAMS, metrics=[bleu])
    assert [result.system for result in comparison.results] == ["system 1", "system 2"]
    assert comparison.results[1].score == \
        sacrebleu.BLEU(tokenize="intl").corpus_score(OTHER, STREAMS).score
    assert "system 2" in str(comparison)


def test_to_pandas_marks_every_missing_figure_alike():
    """group was None in one frame and NaN in another; mean and ci floats in one and
    None in another."""
    frames = [evalproto.compare({"A": HYPS[:20], "B": OTHER[:20]}, REFS[:20], **options
                                ).to_pandas()
              for options in ({}, {"confidence": 10, "groups": [["x"]] * 10 + [[]] * 10},
                              {"paired": "bs", "paired_n": 10})]
    for frame in frames:
        for column in ("score", "mean", "ci", "p_value"):
            assert frame[column].dtype == np.float64, column
        assert not [value for column in ("group", "mean", "ci", "p_value")
                    for value in frame[column] if value is None]  # NaN marks them all
    assert frames[0]["group"].isna().all() and frames[0]["mean"].isna().all()
    assert frames[1]["group"].tolist()[2:] == ["x", "x"]
    assert frames[1]["group"].isna().tolist() == [True, True, False, False]
    assert frames[2]["p_value"].isna().tolist() == [True, False]


def test_to_pandas_says_how_to_install_pandas(monkeypatch):
    comparison = evalproto.compare([HYPS[:5]], REFS[:5])
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'evalproto\[pandas\]'"):
        comparison.to_pandas()


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m.corpus_score(HYPS, "a reference"), TypeError, "one list of references per"),
    (lambda m: m.corpus_score(HYPS, [ref[0] for ref in REFS]), TypeError,
     r"refs\[0\] is of type str; each entry of refs is a list of references"),
    (lambda m: m.corpus_score(HYPS, STREAMS), ValueError,
     "refs has 2 entries but there are 150 hypotheses.*pass it as ref_streams="),
    (lambda m: m.corpus_score(HYPS, REFS[:-1]), ValueError, "refs has 149 entries"),
    (lambda m: m.corpus_score(HYPS, ref_streams=[STREAMS[0], STREAMS[1][:3]]), ValueError,
     "reference stream 2 has 3 references but there are 150 hypotheses"),
    (lambda m: m.corpus_score(HYPS, ref_streams=STREAMS[0]), TypeError,
     "ref_streams must be a list of reference lists"),
    (lambda m: m.corpus_score(HYPS, REFS, ref_streams=STREAMS), TypeError,
     "give the references once"),
    (lambda m: m.corpus_score(HYPS), TypeError, "give the references once"),
    (lambda m: m.corpus_score("one hypothesis", [["a"]]), TypeError,
     "hyps must be a list of hypothesis strings"),
    (lambda m: m.corpus_score(["a", 3], [["a"], ["b"]]), TypeError,
     "segment 2: the hypothesis is of type int; expected str"),
    (lambda m: m.corpus_score(["a"], [[]]), ValueError, "segment 1: no reference"),
])
def test_a_mistaken_call_says_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call(evalproto.load("bleu"))


@pytest.mark.parametrize("call, error, message", [
    (lambda: evalproto.load("bleu", nope=1), TypeError,
     "bleu has no option 'nope'; its options are tokenize"),
    (lambda: evalproto.load("bleu", tokenize="nope"), ValueError, "'nope' is not one of '13a'"),
    (lambda: evalproto.load("bleu", lowercase="yes"), TypeError, "is a flag: True or False"),
    (lambda: evalproto.load("bleu --nope"), ValueError, "No such option '--nope'"),
    (lambda: evalproto.load("nosuch"), ValueError, "unknown evaluator 'nosuch'; registered "
                                                   "evaluators: bleu"),
    (lambda: evalproto.load(3), TypeError, "a metric spec is a string"),
    (lambda: evalproto.load(), TypeError, "takes a metric spec"),
    (lambda: evalproto.load("bleu", command="bleu-evaluator"), TypeError, "takes a metric spec"),
    (lambda: evalproto.load(command="bleu-evaluator", lowercase=True), TypeError,
     "options go into the command itself"),
    (lambda: evalproto.load("bleu", jobs=0), ValueError, "jobs must be a whole number >= 1"),
    (lambda: evalproto.compare({}, [["a"]]), ValueError, "at least one system"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], paired="bs"), ValueError,
     "paired tests compare systems: give two or more"),
    (lambda: evalproto.compare({"A": ["a"], "B": ["a", "b"]}, [["a"]]), ValueError,
     "system 'B': refs has 1 entries but there are 2 hypotheses"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], groups=[["x"], ["y"]]), ValueError,
     "groups has 2 entries for 1 segments"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], groups=["xy"]), TypeError,
     r"groups\[0\] is 'xy'; each entry of groups is a list of tags"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], metrics="bleu"), TypeError,
     r"metrics must be a list .* \(for one: \['bleu'\]\)"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], metrics=[]), ValueError,
     "no metric was given"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], metrics=[3]), TypeError,
     "a metric is a spec such as 'bleu', a MetricSpec or a Metric"),
    (lambda: evalproto.compare({"A": ["a"], "B": ["a"]}, [["a"]], paired="t"), ValueError,
     "paired is 't'; expected 'bs'"),
    (lambda: evalproto.compare({"A": ["a"], "B": ["a"]}, [["a"]], paired="ttest"), ValueError,
     "paired t-test"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], confidence="yes"), TypeError,
     "confidence must be a whole number, got 'yes'"),
    (lambda: evalproto.compare({"A": ["a"]}, [["a"]], confidence=-5), ValueError,
     "confidence must be at least 1, got -5"),
    (lambda: evalproto.load("bleu --tokenize intl", tokenize="zh"), ValueError,
     "tokenize='zh' contradicts the spec 'bleu --tokenize intl'"),
    (lambda: evalproto.load("bleu", timeout="x"), TypeError,
     "timeout must be a number of seconds or None, got 'x'"),
    (lambda: evalproto.load(command="bleu-evaluator", timeout=-1), ValueError,
     "timeout must be more than 0 seconds"),
    (lambda: evalproto.load("bleu").stats_table(["a"], [["a"]], groups=[["x"], ["y"]]),
     ValueError, "groups has 2 entries for 1 segments"),
    (lambda: evalproto.load("bleu").stats_table(["a", "b"], [["a"], ["b"]], ids=["1"]),
     ValueError, "ids has 1 entries for 2 segments"),
    (lambda: evalproto.load("bleu").stats_table(["a"], [["a"]]).bootstrap(0), ValueError,
     "samples must be a whole number >= 1, got 0"),
    (lambda: evalproto.load("bleu").stats_table(["a"], [["a"]]).confidence_interval(-1),
     ValueError, "samples must be a whole number >= 1, got -1"),
])
def test_a_mistaken_setup_says_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_results_are_plain_data(tmp_path):
    comparison = evalproto.compare({"LT22": HYPS, "Lan-Bridge": OTHER}, REFS,
                                   metrics=["bleu", "chrf"], confidence=True, paired="bs")
    json.dumps(comparison.to_dict())  # chrF's resampled figures are float32 inside
    record = comparison.results[1].to_dict()
    assert record["system"] == "LT22" and record["metric"] == "chrf"
    assert type(record["mean"]) is float and type(record["stats"]) is list
    assert record["mean"] == float(comparison.results[1].mean)
    json.dumps(record)


def test_corpus_score_warns_of_tokenized_hypotheses_as_sacrebleu_does():
    tokenized = ["the cat &apos;s hat .", "it is n't here ."] * 50  # sacrebleu's 100 lines
    with pytest.warns(evalproto.InputWarning, match="tokenized period"):
        evalproto.load("bleu").corpus_score(tokenized, [[line] for line in tokenized])


@pytest.mark.parametrize("call, error, message", [
    (lambda path: evalproto.lm_score(3), TypeError, "logs must be a path or a list of paths"),
    (lambda path: evalproto.lm_score(path, by="users"), ValueError, "by is 'users'"),
    (lambda path: evalproto.lm_score(path, confidence="yes"), TypeError,
     "confidence must be a whole number"),
    (lambda path: evalproto.lm_score(path, reranker=(1,)), TypeError,
     r"reranker must be an \(alpha, beta\) pair of numbers, got \(1,\)"),
    (lambda path: evalproto.lm_score(path, reranker="0.5,1"), TypeError,
     "reranker must be an"),
    (lambda path: evalproto.lm_compare(path, path, test="t"), ValueError, "test is 't'"),
    (lambda path: evalproto.lm_compare(path, path, samples=0), ValueError,
     "samples must be at least 1"),
])
def test_a_mistaken_lm_call_says_what_was_expected(call, error, message, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("")
    with pytest.raises(error, match=message):
        call(log)


def test_every_public_name_is_documented():
    """Every public name, and every public method and property of a public class."""
    undocumented = []
    for name in evalproto.__all__:
        value = getattr(evalproto, name)
        if name == "__version__" or isinstance(value, (str, int, float, tuple, dict)):
            continue
        members = [(f"{name}.{key}", getattr(value, key)) for key, member in vars(value).items()
                   if not key.startswith("_") and (callable(member) or isinstance(member, property))
                   ] if inspect.isclass(value) else []
        undocumented += [label for label, documented in [(name, value), *members]
                         if not (inspect.getdoc(documented) or "").strip()]
    assert undocumented == []


def test_the_modules_examples_run():
    assert doctest.testmod(evalproto.api.scoring).failed == 0


def test_a_warning_points_at_the_callers_line(tmp_path):
    """Not at the line deep inside evalproto where it was found."""
    with pytest.warns(evalproto.InputWarning) as said:
        evalproto.load("bleu").corpus_score(["a b c ."] * 120, [["a b c ."]] * 120)
    assert said[0].filename == __file__
