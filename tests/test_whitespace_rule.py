"""Whitespace around a segment, on every path.

In process (-m, -j, Dask, the Python API) a segment is scored as sacrebleu scores it: a
text file's lines as sacrebleu's command line reads them (split at "\\n", the end of
each line stripped, its start kept), strings from Python as given, as sacrebleu's API
takes them. Over the protocol every field is stripped: an evaluator command scores the
stripped texts, and the client says so in one warning with the count of segments it
changed. These tests pit every path against sacrebleu's command line and API, on text
with whitespace of every kind at both ends, for every tokenizer and chrF/TER option."""

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest
import sacrebleu.sacrebleu
from conftest import json_rows, read_lines, run_cli, script
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER

import evalproto
from evalproto.base.errors import EvaluatorWarning
from evalproto.evaluators.bleu import BLEU

TOKENIZERS = ["13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab"]
CHRF_OPTIONS = [[], ["--whitespace"], ["-cw", "2"], ["--lowercase", "--whitespace", "-cc", "3"],
                ["--eps-smoothing", "--beta", "3"]]
TER_OPTIONS = [[], ["--case-sensitive"], ["--no-punct"], ["--normalized", "--asian-support"],
               ["--normalized", "--case-sensitive", "--no-punct"]]
SACREBLEU_CHRF = {"--whitespace": ["--chrf-whitespace"], "-cw": ["-cw"], "-cc": ["-cc"],
                  "--lowercase": ["--chrf-lowercase"], "--eps-smoothing": ["--chrf-eps-smoothing"],
                  "--beta": ["--chrf-beta"]}
SACREBLEU_TER = {"--case-sensitive": ["--ter-case-sensitive"], "--no-punct": ["--ter-no-punct"],
                 "--normalized": ["--ter-normalized"], "--asian-support": ["--ter-asian-support"]}
WHITESPACE = " \t\u00a0\u3000\u2028\x85\x0b\x0c\x1c\u2009\r"
"""Whitespace of every kind Python's str.strip() and sacrebleu's rstrip() see ("\\r" in a
line is kept by sacrebleu's reading, which splits at "\\n" only)."""
CONTENT = "ab cat Sat (1) 3.5 x-y, z's \"q\" ! 東京晴れ 한국어 ."


def sacrebleu_args(options: List[str], table: Dict[str, List[str]]) -> List[str]:
    """Our chrF/TER evaluator options as sacrebleu's command line spells them."""
    args: List[str] = []
    for option in options:
        args += table.get(option, [option])
    return args


def api_metric(kind: str, options: Sequence[str]):
    """sacrebleu's own metric object for one of our specs."""
    if kind == "bleu":
        return SacreBLEU(tokenize=options[1])
    if kind == "chrf":
        words = dict(zip(options, [*options[1:], None]))
        return SacreCHRF(char_order=int(words.get("-cc") or 6),
                         word_order=int(words.get("-cw") or 0),
                         beta=int(words.get("--beta") or 2),
                         lowercase="--lowercase" in options, whitespace="--whitespace" in options,
                         eps_smoothing="--eps-smoothing" in options)
    return SacreTER(normalized="--normalized" in options, no_punct="--no-punct" in options,
                    asian_support="--asian-support" in options,
                    case_sensitive="--case-sensitive" in options)


def configurations() -> List[Tuple[str, List[str], List[str]]]:
    """(our spec, sacrebleu's command-line arguments, the spec's words): every tokenizer,
    and every chrF and TER option, one sacrebleu run per tokenizer carrying one chrF and
    one TER variant."""
    runs = []
    for number, tokenizer in enumerate(TOKENIZERS):
        chrf = CHRF_OPTIONS[number % len(CHRF_OPTIONS)]
        ter = TER_OPTIONS[number % len(TER_OPTIONS)]
        runs.append([("bleu", ["-tok", tokenizer]), ("chrf", chrf), ("ter", ter)])
    return runs


RUNS = configurations()
SPECS = sorted({" ".join([kind, *options]).strip() for run in RUNS for kind, options in run})


class _Descriptor:
    """A stream as sacrebleu's main() uses sys.stdin and sys.stdout: by a descriptor it
    may close (a copy of the file's)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def fileno(self) -> int:
        return os.dup(self.stream.fileno())


def sacrebleu_cli(ref_paths: List[str], hyp_path: str, run) -> Dict[str, float]:
    """sacrebleu's own command line, run in this process (-w 350: every bit of the score
    survives the printing), for one tokenizer and one chrF and TER variant."""
    (_, bleu), (_, chrf), (_, ter) = run
    argv = ["sacrebleu", *ref_paths, "-i", hyp_path, "-m", "bleu", "chrf", "ter", *bleu,
            *sacrebleu_args(chrf, SACREBLEU_CHRF), *sacrebleu_args(ter, SACREBLEU_TER),
            "-w", "350", "-f", "json"]
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out, \
            open(os.devnull, encoding="utf-8") as nothing:
        saved = sys.argv, sys.stdin, sys.stdout, os.environ.get("NO_COLOR")
        # sacrebleu's main() opens its stdin and stdout again by their descriptors
        sys.argv, sys.stdin, sys.stdout = argv, _Descriptor(nothing), _Descriptor(out)
        os.environ["NO_COLOR"] = "1"
        try:
            sacrebleu.sacrebleu.main()
        finally:
            for stream in (sys.stdin, sys.stdout):
                if not isinstance(stream, _Descriptor):
                    stream.close()
            sys.argv, sys.stdin, sys.stdout, colour = saved
            if colour is None:
                del os.environ["NO_COLOR"]
        out.seek(0)
        by_name = {entry["name"][:4]: entry["score"] for entry in json.load(out)}
    return {" ".join([kind, *options]).strip(): by_name[{"bleu": "BLEU", "chrf": "chrF",
                                                         "ter": "TER"}[kind]]
            for kind, options in run}


def sacrebleu_scores(ref_paths: List[str], hyp_path: str) -> Dict[str, float]:
    """Every spec's score from sacrebleu's command line."""
    found: Dict[str, float] = {}
    for run in RUNS:
        found.update(sacrebleu_cli(ref_paths, hyp_path, run))
    return found


def evalproto_scores(ref_paths: List[str], hyp_path: str, *args: str) -> Dict[str, float]:
    result = run_cli("corpus-score", *ref_paths, hyp_path, *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return {row["metric"]: row["score"] for row in json_rows(result.output)}


def command(spec: str) -> str:
    name, _, options = spec.partition(" ")
    return f"{script(name + '-evaluator')} {options}".strip()


texts = st.builds(lambda before, middle, after: before + middle + after,
                  st.text(WHITESPACE, max_size=3), st.text(CONTENT + WHITESPACE, max_size=25),
                  st.text(WHITESPACE, max_size=3))
corpora = st.integers(1, 2).flatmap(lambda nrefs: st.lists(
    st.tuples(st.lists(texts, min_size=nrefs, max_size=nrefs), texts), min_size=1, max_size=5))


def write(directory: Path, corpus) -> Tuple[List[str], str]:
    """The corpus as files, one line per segment ("\\n"-free texts, as lines are)."""
    nrefs = len(corpus[0][0])
    refs = []
    for number in range(nrefs):
        path = directory / f"ref{number}"
        path.write_text("".join(segment[0][number] + "\n" for segment in corpus),
                        encoding="utf-8", newline="")
        refs.append(str(path))
    hyp = directory / "hyp"
    hyp.write_text("".join(segment[1] + "\n" for segment in corpus), encoding="utf-8",
                   newline="")
    return refs, str(hyp)


@given(corpus=corpora)
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_in_process_scores_equal_sacrebleus_command_line_and_api(tmp_path_factory, corpus):
    """-m and the Python API against sacrebleu's command line (on files) and its API (on
    the strings as given), with ==."""
    directory = tmp_path_factory.mktemp("corpus")
    ref_paths, hyp_path = write(directory, corpus)
    expected = sacrebleu_scores(ref_paths, hyp_path)
    assert evalproto_scores(ref_paths, hyp_path, "-m", *SPECS) == expected
    hyps = [hyp for _, hyp in corpus]
    refs = [list(segment_refs) for segment_refs, _ in corpus]
    for run in RUNS:
        for kind, options in run:
            spec = " ".join([kind, *options]).strip()
            ours = evalproto.load(spec).corpus_score(hyps, refs).score
            theirs = api_metric(kind, options).corpus_score(hyps, list(map(list, zip(*refs))))
            assert ours == theirs.score, spec


@given(corpus=corpora)
@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_other_paths_score_as_sacrebleu_or_say_what_the_protocol_dropped(tmp_path_factory,
                                                                         corpus):
    """-j 2 equals sacrebleu's command line; an evaluator command (-e) scores the
    stripped texts, and exactly the segments it changed are counted in one warning
    per metric."""
    directory = tmp_path_factory.mktemp("corpus")
    ref_paths, hyp_path = write(directory, corpus)
    expected = sacrebleu_scores(ref_paths, hyp_path)
    assert evalproto_scores(ref_paths, hyp_path, "-m", *SPECS, "-j", "2") == expected

    stripped_dir = directory / "stripped"
    stripped_dir.mkdir()
    as_read = list(zip(zip(*(read_lines(path) for path in ref_paths)), read_lines(hyp_path)))
    stripped_refs, stripped_hyp = write(stripped_dir, [
        ([ref.strip() for ref in refs], hyp.strip()) for refs, hyp in as_read])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        over_the_pipe = evalproto_scores(ref_paths, hyp_path, *[
            word for spec in SPECS for word in ("-e", command(spec))])
    assert dict(zip(SPECS, over_the_pipe.values())) == sacrebleu_scores(stripped_refs,
                                                                         stripped_hyp)
    changed = sum(any(text != text.strip() for text in (*refs, hyp)) for refs, hyp in as_read)
    said = [str(warning.message) for warning in caught
            if issubclass(warning.category, EvaluatorWarning) and "protocol strips" in
            str(warning.message)]
    assert len(said) == (len(SPECS) if changed else 0)
    assert all(f": {changed} segment" in message for message in said)


def test_the_red_teams_example(tmp_path):
    """One leading space before "(1)": intl splits the bracket from the digit only after
    a preceding character."""
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    ref.write_text("(1) the cat sat on the mat\n")
    hyp.write_text(" (1) the cat sat on the mat\n")
    assert evalproto_scores([str(ref)], str(hyp), "-m", "bleu -tok intl") == {
        "bleu -tok intl": 72.59795291154772}
    score = evalproto.load("bleu", tokenize="intl").corpus_score(
        [" (1) the cat sat on the mat"], [["(1) the cat sat on the mat"]])
    assert score.score == SacreBLEU(tokenize="intl").corpus_score(
        [" (1) the cat sat on the mat"], [["(1) the cat sat on the mat"]]).score == \
        72.59795291154772


def test_an_evaluator_command_says_what_the_protocol_dropped(tmp_path):
    """The same warning from the command line (one line, with the count and the first
    segment) and from Python; nothing is said when no segment changed."""
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    ref.write_text("(1) the cat\n(2) a dog\n\tthree\n")
    hyp.write_text("(1) the cat\n (2) a dog\n three\n")
    result = subprocess.run([script("evalproto"), "corpus-score", str(ref), str(hyp), "-e",
                             f"{script('bleu-evaluator')} -tok intl"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("\n") == 1 and "Warning: evaluator " in result.stderr
    assert f"2 segments (the first: segment 2 of {hyp}) had whitespace at an end" \
        in result.stderr
    with evalproto.load(command=f"{script('bleu-evaluator')} -tok intl") as bleu:
        with pytest.warns(EvaluatorWarning, match="1 segment \\(the first: segment 1 of system"):
            bleu.corpus_score([" (1) the cat"], [["(1) the cat"]])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert bleu.corpus_score(["(1) the cat"], [["(1) the cat"]]).score == \
                SacreBLEU(tokenize="intl").corpus_score(["(1) the cat"], [["(1) the cat"]]).score


def test_the_pure_python_path_keeps_whitespace_as_the_kernels_do(monkeypatch):
    """chrF's whitespace and BLEU's intl see a leading space with the compiled kernels and
    without them."""
    items = [(["(1) a b"], " (1) a b "), (["  x y"], "x y\u3000")]
    compiled = [evalproto.load(spec).source.stats_many(items).tolist()
                for spec in ("bleu -tok intl", "chrf --whitespace")]
    monkeypatch.setenv("EVALPROTO_PURE_PYTHON", "1")
    assert [evalproto.load(spec).source.stats_many(items).tolist()
            for spec in ("bleu -tok intl", "chrf --whitespace")] == compiled


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
