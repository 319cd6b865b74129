"""A metric author's view: subclass Evaluator, get a console script and -e for free."""

import importlib.util
import io
import json
import math
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, json_rows, read_lines, run_cli, serve

from evalproto import Evaluator, EvaluatorError
from evalproto.metrics import registry
from evalproto.sources import base as sources
from evalproto.wire.server import serve as serve_requests

CUSTOM = textwrap.dedent('''
    import click
    from evalproto import Evaluator

    class WordRecall(Evaluator):
        """Share of reference words that the hypothesis contains."""

        name = "word-recall"
        options = (click.Option(["--lowercase"], is_flag=True),)

        def __init__(self, lowercase=False):
            self.lowercase = lowercase
            self.stat_names = ("found", "ref_words")

        def stats(self, refs, hyp):
            fold = str.lower if self.lowercase else str
            words = set(fold(hyp).split())
            ref = fold(refs[0]).split()
            return [sum(word in words for word in ref), len(ref)]

        def score(self, vector):
            return 100 * vector[0] / vector[1] if vector[1] else 0.0

        def signature_fields(self):
            return {"case": "lc" if self.lowercase else "mixed"}

    if __name__ == "__main__":
        WordRecall.main()
''')


@pytest.fixture
def custom(tmp_path):
    path = tmp_path / "word_recall.py"
    path.write_text(CUSTOM)
    spec = importlib.util.spec_from_file_location("word_recall", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module.WordRecall


def expected_recall(lowercase):
    found = total = 0
    for ref, hyp in zip(read_lines(DE_EN_REFS[0]), read_lines(DE_EN_HYP)):
        if lowercase:
            ref, hyp = ref.lower(), hyp.lower()
        words = set(hyp.split())
        found += sum(word in words for word in ref.split())
        total += len(ref.split())
    return 100 * found / total


def test_custom_evaluator_is_served_and_scored_through_dash_e(custom):
    path, _ = custom
    result = run_cli("corpus-score", DE_EN_REFS[0], DE_EN_HYP, "-f", "json",
                     "-e", f"{sys.executable} {path} --lowercase")
    assert result.exit_code == 0, result.output
    (row,) = json_rows(result.output)
    assert row["score"] == pytest.approx(expected_recall(lowercase=True), abs=1e-12)
    assert row["stat_names"] == ["found", "ref_words"]
    assert row["signature"].startswith("nrefs:1|case:lc|version:evalproto-")


def test_custom_evaluator_speaks_the_protocol(custom):
    path, _ = custom
    result = serve([sys.executable, str(path)],
                   "SCORE ||| The cat sat ||| the cat\nEVAL ||| 2 3\nINFO\nEVAL ||| 1\n")
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "1 3"
    assert float(lines[1]) == pytest.approx(200 / 3)
    assert json.loads(lines[2])["name"] == "word-recall"
    assert lines[3] == "ERROR request 4: EVAL needs 2 numbers (found ref_words), got 1"
    assert result.returncode == 1


def test_options_are_declared_once_for_script_and_spec(custom):
    path, word_recall = custom
    assert word_recall.from_args(["--lowercase"]).lowercase is True
    assert word_recall.from_args([]).lowercase is False
    help_text = subprocess.run([sys.executable, str(path), "--help"], capture_output=True,
                               text=True).stdout
    assert "--lowercase" in help_text and "--keep-going" in help_text
    assert "Share of reference words" in help_text


def test_the_default_signature_names_the_metric_and_its_options(custom):
    """The README's WordRecall signed alike with and without --lowercase, and did not
    name the metric; the hook (signature_fields) still has the last word."""
    path, overriding = custom
    default = type("WordRecall", (overriding,), {"signature_fields": Evaluator.signature_fields})
    assert default().signature().startswith("metric:word-recall|lowercase:no|version:")
    for built in (default(lowercase=True), default(True), default.from_args(["--lowercase"]),
                  default.from_options(lowercase=True),
                  default.from_args(["--lowercase"]).with_changes()):
        assert built.signature().startswith("metric:word-recall|lowercase:yes|version:")
    assert overriding(True).signature().startswith("case:lc|version:")


def test_stats_of_the_wrong_length_are_an_error_not_a_number():
    class Broken(Evaluator):
        name = "broken"
        stat_names = ("a", "b")

        def stats(self, refs, hyp):
            return [1.0]

        def score(self, vector):
            return 0.0

    with pytest.raises(EvaluatorError, match="item 1: evaluator .* failed: .*returned 1 numbers"):
        Broken().stats_many([(["ref"], "hyp")])


class Counting(Evaluator):
    """One stat, the hypothesis length; its batch path can be made to fail."""

    name = "counting"
    stat_names = ("length",)
    batch_error = None

    def stats(self, refs, hyp):
        if hyp == "bad":
            raise ValueError("a bad hypothesis")
        return [len(hyp)]

    def stats_batch(self, items):
        if self.batch_error:
            raise self.batch_error
        return super().stats_batch(items)

    def score(self, vector):
        return float(vector[0])


def test_a_failing_batch_names_the_item_that_fails_alone():
    counting = Counting()
    counting.batch_error = TypeError("somewhere in the batch")
    with pytest.raises(EvaluatorError, match="item 2: evaluator 'counting' failed: a bad "
                                             "hypothesis"):
        counting.stats_many([(["r"], "fine"), (["r"], "bad")])


@pytest.mark.parametrize("first_segment", [1, 11])
def test_a_failure_in_a_corpus_names_the_segment_and_system(monkeypatch, first_segment):
    monkeypatch.setattr(sources, "FIRST_CHUNK_ITEMS", 3)  # the failure is in the third
    monkeypatch.setattr(sources, "CHUNK_ITEMS", 3)  # chunk
    refs = [["r"]] * 5
    systems = {"a.txt": ["x"] * 5, "b.txt": ["y", "y", "y", "bad", "y"]}
    with pytest.raises(EvaluatorError) as caught:
        sources.corpus_rows(Counting(), refs, systems, first_segment=first_segment)
    assert str(caught.value) == (f"segment {first_segment + 3} of b.txt: evaluator "
                                 "'counting' failed: a bad hypothesis")


def test_an_evaluator_error_keeps_its_item_and_place_across_processes():
    error = EvaluatorError("evaluator 'x' failed: boom", item=4).shifted(10)
    assert str(error) == "item 15: evaluator 'x' failed: boom"
    for copy in (pickle.loads(pickle.dumps(error)),
                 pickle.loads(pickle.dumps(error.at("segment 3 of h.txt")))):
        assert (copy.problem, copy.item) == (error.problem, 14)
    assert str(copy) == "segment 3 of h.txt: evaluator 'x' failed: boom"


def test_a_batch_error_no_item_explains_is_not_swallowed():
    counting = Counting()
    counting.batch_error = TypeError("a bug in the batch path")
    with pytest.raises(TypeError, match="a bug in the batch path"):
        counting.stats_many([(["r"], "fine"), (["r"], "also fine")])


@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter"])
def test_the_base_class_reads_each_reference_set_once(metric, monkeypatch):
    """The base class owns the reference cache: each distinct reference set is read
    once, a with_changes copy (BLEU's sentence variant) shares the cache, and a pickled
    copy (for another process) starts its own."""
    evaluator = registry.from_spec(metric)
    reads = []
    original = evaluator.read_references
    monkeypatch.setattr(evaluator, "read_references",
                        lambda refs: reads.append(refs) or original(refs))
    first, second = ("the cat sat on the mat", "a cat was on the mat"), ("it rained",)
    for refs, hyp in [(first, "the cat"), (first, "a cat sat"), (second, "it rains"),
                      (first, "on the mat")]:
        evaluator.stats(refs, hyp)
    evaluator.for_sentences().with_changes().references(first)
    assert reads == [first, second]
    used = registry.from_spec(metric)
    used.stats(first, "the cat")
    copy = pickle.loads(pickle.dumps(used))
    assert "_reference_cache" not in vars(copy) and copy.references(first) == original(first)


def test_the_default_batch_scores_item_by_item():
    assert Counting().stats_many([(["r"], "ab"), (["r"], "abc")]).tolist() == [[2.0], [3.0]]


def test_items_that_share_a_references_object_are_read_as_they_are():
    """checked_items checks a references object once for consecutive items of a list
    that share it (they share one tuple); a generator that reuses one list, changing it
    between items, gets each item's own references. Texts are kept as given."""
    from evalproto.base.items import checked_items

    shared = [" the cat ", "a cat"]
    items = [(shared, " x "), (shared, "y"), (["b "], "z"), (shared, "w")]
    checked = checked_items(items)
    assert [tuple(item) for item in checked] == [
        ((" the cat ", "a cat"), " x "), ((" the cat ", "a cat"), "y"), (("b ",), "z"),
        ((" the cat ", "a cat"), "w")]
    assert checked[0].refs is checked[1].refs and checked[1].refs is not checked[3].refs

    def reusing():
        refs = ["first"]
        yield refs, "h"
        refs[0] = "second"
        yield refs, "h"

    assert [item.refs for item in checked_items(reusing())] == [("first",), ("second",)]
    with pytest.raises(TypeError, match="segment 2: a reference is of type int"):
        checked_items([(["a"], "h"), (["a", 3], "h")])
    for items in ([(None, "h")], iter([(None, "h")])):  # None is no shared references
        with pytest.raises(TypeError, match="segment 1: "):
            checked_items(items)


@pytest.mark.parametrize("keep_going", [False, True])
def test_a_failing_score_among_arrived_requests_gets_its_own_error(keep_going):
    requests = io.BytesIO(b"SCORE ||| r ||| fine\nSCORE ||| r ||| bad\nSCORE ||| r ||| ok\n")
    replies, log = io.BytesIO(), io.StringIO()
    status = serve_requests(Counting(), requests, replies, log, keep_going=keep_going)
    expected = ["4", "ERROR request 2: a bad hypothesis"] + (["2"] if keep_going else [])
    assert replies.getvalue().decode().splitlines() == expected
    assert status == (0 if keep_going else 1)


class UncheckedBatch(Counting):
    """A bulk path that forgets to check that its numbers are finite."""

    def stats(self, refs, hyp):
        return [math.nan] if hyp == "nan" else super().stats(refs, hyp)

    def stats_batch(self, items):
        return np.array([self.stats(refs, hyp) for refs, hyp in items], dtype=np.float64)


def test_a_non_finite_row_from_a_bulk_path_is_an_error_reply_in_step():
    requests = io.BytesIO(b"SCORE ||| r ||| fine\nSCORE ||| r ||| nan\nSCORE ||| r ||| ok\n")
    replies, log = io.BytesIO(), io.StringIO()
    status = serve_requests(UncheckedBatch(), requests, replies, log, keep_going=True)
    assert replies.getvalue().decode().splitlines() == [
        "4", "ERROR request 2: the statistics are not all finite: (nan,)", "2"]
    assert status == 0


def test_the_server_closes_its_evaluator_at_the_end_of_input(tmp_path):
    marker = tmp_path / "closed"
    path = tmp_path / "closing.py"
    path.write_text(CUSTOM.replace(
        "    def signature_fields(self):",
        f"    def close(self):\n            open({str(marker)!r}, 'w').write('closed')\n\n"
        "    def signature_fields(self):"))
    result = serve([sys.executable, str(path)], "SCORE ||| a b ||| a\n")
    assert result.returncode == 0 and result.stdout == b"1 2\n"
    assert marker.read_text() == "closed"


def test_the_built_in_table_is_what_setup_cfg_registers():
    """`-m bleu` loads from registry.BUILT_IN without reading entry points: the table must
    say what the installed entry points say, and each entry must load its class."""
    installed = {name: entry.value for name, entry in registry.available().items()
                 if entry.value.startswith("evalproto.")}
    assert registry.BUILT_IN == installed
    for name in registry.BUILT_IN:
        assert registry.load(name) is registry.available()[name].load()


@pytest.mark.parametrize("name", sorted(registry.BUILT_IN))
def test_every_option_has_one_default_for_the_command_line_and_python(name):
    """`bleu-evaluator` and `-m bleu` take click's default; `BLEU()` takes the
    constructor's: they must be the same value, or a metric built in Python would
    sign and score differently from the same metric named on the command line."""
    import inspect

    import click

    evaluator = registry.load(name)
    required = {"parts": ["bleu=1"], "labels": ["--labels", "a,b"]}
    params = [param for param in evaluator.options if isinstance(param, click.Parameter)]
    words = [word for param in params for word in required.get(param.name, [])]
    parsed = click.Command(name, params=params).make_context(name, words).params
    constructor = inspect.signature(evaluator.__init__).parameters
    for param in params:
        if param.name in required:
            assert constructor[param.name].default is inspect.Parameter.empty
        else:
            assert constructor[param.name].default == parsed[param.name], param.name
