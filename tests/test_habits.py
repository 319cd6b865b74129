"""corpus-score keeps its own conventions and takes a sacrebleu user's habits too:
`-m bleu chrf ter`, sacrebleu's metric options, `-b`, BLEU's detail line, sacrebleu's
JSON keys, a precision that suits each metric, usage errors that exit 2 with a hint,
warnings about input that looks wrong, and a reader that stops early."""

import json
import os
import subprocess
import sys
import warnings

import pytest
from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, json_rows, read_lines, run_cli, script
from sacrebleu.metrics import BLEU, CHRF, TER

from evalproto import InputWarning
from evalproto.evaluators.bleu import BLEU as OurBLEU
from evalproto.evaluators.wer import CER, WER

REFS = [read_lines(path) for path in DE_EN_REFS]


def scores(*args: str) -> list:
    result = run_cli("corpus-score", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


# -- -m takes several metrics -------------------------------------------------------------

@pytest.mark.parametrize("metrics", [
    ["-m", "bleu", "chrf", "ter"],
    ["--metric", "bleu", "chrf", "ter"],
    ["--metric=bleu", "chrf", "ter"],
    ["-mbleu", "chrf", "ter"],
    ["-m", "bleu", "chrf", "-m", "ter"],
])
def test_m_takes_several_metrics_as_sacrebleu_does(metrics):
    one_each = scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "-m", "chrf", "-m", "ter")
    assert [row["metric"] for row in one_each] == ["bleu", "chrf", "ter"]
    assert scores(*DE_EN_REFS, DE_EN_HYP, *metrics) == one_each


@pytest.mark.parametrize("order", [
    ["-i", DE_EN_HYP, DE_EN_HYP2, "-m", "bleu", "chrf"],
    ["-m", "bleu", "chrf", "-i", DE_EN_HYP, DE_EN_HYP2],
])
def test_several_metrics_and_several_systems_in_either_order(order):
    rows = scores(*DE_EN_REFS, *order)
    assert [(row["system"], row["metric"]) for row in rows] == [
        (DE_EN_HYP, "bleu"), (DE_EN_HYP, "chrf"), (DE_EN_HYP2, "bleu"), (DE_EN_HYP2, "chrf")]


def test_a_file_after_the_metrics_is_a_usage_error_that_says_where_files_go():
    result = run_cli("corpus-score", *DE_EN_REFS, "-m", "bleu", "chrf", DE_EN_HYP)
    assert result.exit_code == 2
    assert f"{DE_EN_HYP!r} comes after -m, where metrics go, but it is a file" in result.output
    before = run_cli("corpus-score", "-m", "bleu", "chrf", *DE_EN_REFS, DE_EN_HYP)
    assert before.exit_code == 2 and "give the files before -m" in before.output
    ended = run_cli("corpus-score", "-f", "json", "-m", "bleu", "chrf", "--", *DE_EN_REFS,
                    DE_EN_HYP)  # or end the metrics with --
    assert json_rows(ended.output) == scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf")


def test_a_metric_name_is_never_read_as_a_file(tmp_path, monkeypatch):
    missing = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "chrf")
    assert missing.exit_code == 2
    assert "'chrf' is not a file but the name of a metric: name metrics with -m" in \
        missing.output
    monkeypatch.chdir(tmp_path)  # a file named like a metric: a file where files go,
    (tmp_path / "chrf").write_text(open(DE_EN_HYP2, encoding="utf-8").read(), "utf-8")
    as_file = scores(*DE_EN_REFS, "chrf")  # and a metric after -m
    assert [row["system"] for row in as_file] == ["chrf"]
    as_metric = scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf")
    assert [row["metric"] for row in as_metric] == ["bleu", "chrf"]


# -- sacrebleu's metric options -------------------------------------------------------------

@pytest.mark.slow
def test_sacrebleus_metric_options_set_the_metrics_they_belong_to():
    rows = scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "ter", "-tok", "intl", "-lc",
                  "-s", "floor", "-sv", "0.2", "-cc", "5", "-cw", "2", "--chrf-beta", "1",
                  "--chrf-whitespace", "--chrf-lowercase", "--chrf-eps-smoothing",
                  "--ter-case-sensitive", "--ter-no-punct", "--ter-normalized",
                  "--ter-asian-support")
    hyps = read_lines(DE_EN_HYP)
    expected = [
        BLEU(tokenize="intl", lowercase=True, smooth_method="floor", smooth_value=0.2),
        CHRF(char_order=5, word_order=2, beta=1, whitespace=True, lowercase=True,
             eps_smoothing=True),  # -lc is BLEU's alone, as in sacrebleu
        TER(case_sensitive=True, no_punct=True, normalized=True, asian_support=True)]
    for row, metric in zip(rows, expected):
        assert row["score"] == metric.corpus_score(hyps, REFS).score
    assert [row["metric"] for row in rows] == [
        "bleu --tokenize intl --smooth-method floor --smooth-value 0.2 --lowercase",
        "chrf --char-order 5 --word-order 2 --beta 1 --whitespace --lowercase "
        "--eps-smoothing", "ter --case-sensitive --asian-support --no-punct --normalized"]
    assert [row["name"] for row in rows] == ["BLEU", "chrF1++", "TER"]


def test_an_option_that_a_spec_already_says_alike_is_taken_once():
    (row,) = scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu -tok intl", "-tok", "intl")
    assert row["metric"] == "bleu -tok intl"
    assert row["score"] == BLEU(tokenize="intl").corpus_score(read_lines(DE_EN_HYP), REFS).score


def test_the_default_bleu_takes_bleu_options():
    (row,) = scores(*DE_EN_REFS, DE_EN_HYP, "-tok", "char")
    assert row["score"] == BLEU(tokenize="char").corpus_score(read_lines(DE_EN_HYP), REFS).score


@pytest.mark.parametrize("args, message", [
    (["-m", "bleu --tokenize intl", "-tok", "zh"],
     "-tok zh contradicts the spec 'bleu --tokenize intl', which sets --tokenize intl itself"),
    (["-m", "chrf -cw 1", "-cw", "2"],
     "-cw 2 contradicts the spec 'chrf -cw 1', which sets --word-order 1 itself"),
    (["-m", "chrf", "-lc"], "-lc is an option of bleu (as in sacrebleu), and no -m bleu is "
                            "among the metrics: add -m bleu, or leave -lc out"),
    (["-cw", "2"], "-cw is an option of chrf (as in sacrebleu), and no -m chrf"),
    (["-m", "bleu", "--ter-normalized"], "--ter-normalized is an option of ter"),
    (["-e", "bleu-evaluator", "-tok", "intl"], "no -m bleu is among the metrics"),
    (["-tok", "klingon"], "-tok klingon: Invalid value for '--tokenize'"),
    (["-m", "chrf", "-cw", "two"], "-cw two: Invalid value for '--word-order'"),
])
def test_options_that_contradict_or_belong_to_no_metric_are_usage_errors(args, message):
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output.replace('"', "'")


def test_stats_take_the_same_options(tmp_path):
    output = tmp_path / "s.stats"
    result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "-tok", "intl",
                     "-o", str(output))
    assert result.exit_code == 0, result.output
    reduced = json_rows(run_cli("reduce", str(output), "-f", "json").output)
    assert [row["metric"] for row in reduced] == ["bleu --tokenize intl", "chrf"]
    assert reduced == scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "-tok", "intl")


# -- what is printed ------------------------------------------------------------------------

def sacrebleu_json(*args: str) -> list:
    done = subprocess.run([script("sacrebleu"), *args, "-f", "json"], capture_output=True,
                          timeout=120, check=True, text=True)
    found = json.loads(done.stdout)
    return found if isinstance(found, list) else [found]


@pytest.mark.slow
def test_json_rows_carry_sacrebleus_name_and_verbose_score():
    ours = scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "ter", "-cw", "2")
    theirs = sacrebleu_json(*DE_EN_REFS, "-i", DE_EN_HYP, "-m", "bleu", "chrf", "ter",
                            "-cw", "2")
    assert len(ours) == len(theirs) == 3
    for row, sacre in zip(ours, theirs):
        assert row["name"] == sacre["name"]
        assert row.get("verbose_score") == sacre.get("verbose_score")
        assert round(row["score"], 1) == sacre["score"]
    assert "verbose_score" in ours[0] and "verbose_score" not in ours[1]


def test_score_only_prints_one_score_per_line_in_the_json_order():
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2,
                     "-m", "bleu", "wer", "-b")
    assert result.exit_code == 0, result.output
    rows = scores(*DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2, "-m", "bleu", "wer")
    assert result.output.splitlines() == [
        f"{row['score']:.{1 if row['metric'] == 'bleu' else 3}f}" for row in rows]
    sacre = subprocess.run([script("sacrebleu"), *DE_EN_REFS, "-i", DE_EN_HYP, "-b", "-w", "2"],
                           capture_output=True, text=True, timeout=120, check=True)
    ours = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-b", "-w", "2")
    assert ours.output == sacre.stdout


def test_score_only_with_sentence_scores_and_intervals():
    segments = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", "wer", "-sl", "-b")
    assert segments.exit_code == 0
    lines = segments.output.splitlines()
    assert len(lines) == 150 and all(len(line.split(".")[1]) == 3 for line in lines)
    interval = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-b", "-ci", "-cin", "20")
    assert interval.exit_code == 0
    assert interval.output.count("\n") == 1 and " ± " in interval.output


@pytest.mark.parametrize("output_format", ["json", "tsv"])
def test_score_only_is_text(output_format):
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-b", "-f", output_format)
    assert result.exit_code == 2
    assert f"-b prints bare scores, one per line; it does not combine with -f " \
           f"{output_format}" in result.output


def test_the_text_shows_bleus_detail_line_as_sacrebleu_does():
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "ter")
    theirs = subprocess.run([script("sacrebleu"), *DE_EN_REFS, "-i", DE_EN_HYP, "-f", "text",
                             "-m", "bleu"], capture_output=True, text=True, timeout=120)
    sacre_line = theirs.stdout.strip().split(" = ", 1)[1]  # after the name and signature
    details = [line for line in result.output.splitlines() if " = " in line]
    assert details == [f"{DE_EN_HYP}  bleu  BLEU = {sacre_line}"]


def fraction_systems(tmp_path):
    """A reference of 1000 words, and two systems with WER 0.609 and 0.600."""
    ref = [" ".join(f"w{i}" for i in range(100))] * 10
    def wrong(words_wrong):
        return [" ".join(["x"] * n + [f"w{i}" for i in range(n, 100)]) for n in words_wrong]
    paths = []
    for name, lines in (("ref", ref), ("a", wrong([61] * 9 + [60])), ("b", wrong([60] * 10))):
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(line + "\n" for line in lines))
        paths.append(str(path))
    return paths


def test_a_fraction_shows_the_detail_a_percentage_shows(tmp_path):
    ref, a, b = fraction_systems(tmp_path)
    result = run_cli("corpus-score", ref, "-i", a, b, "-m", "wer", "bleu", "-w", "1")
    assert result.exit_code == 0
    table = [line.split() for line in result.output.splitlines()[1:3]]
    assert [row[1] for row in table] == ["0.609", "0.600"]  # not "0.6" twice
    assert all(len(row[2].split(".")[1]) == 1 for row in table)  # BLEU keeps -w 1
    assert WER.extra_decimals == CER.extra_decimals == 2  # declared by the metric
    assert OurBLEU.extra_decimals == 0


@pytest.mark.slow
def test_an_evaluator_command_shows_its_scores_as_the_same_metric_in_process():
    """INFO gives the score's name and decimals, so `-e wer-evaluator` prints 0.609 as
    `-m wer` does (BLEU's details need the evaluator itself, so only -m has them)."""
    args = [*DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2]
    in_process = run_cli("corpus-score", *args, "-m", "wer", "bleu", "-b")
    over_pipe = run_cli("corpus-score", *args, "-e", script("wer-evaluator"),
                        "-e", script("bleu-evaluator"), "-b")
    assert over_pipe.exit_code == 0 and over_pipe.output == in_process.output
    rows = scores(*args, "-e", script("wer-evaluator"), "-e", script("bleu-evaluator"))
    assert [row["name"] for row in rows] == ["wer", "BLEU", "wer", "BLEU"]


# -- usage errors exit 2 --------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", "bleuu"], "unknown evaluator 'bleuu'"),
    (["corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", "bleu --tokenise intl"],
     "No such option '--tokenise'"),
    (["stats", *DE_EN_REFS, DE_EN_HYP, "-m", "chrf --beta", "-o", "-"],
     "Option '--beta' requires an argument"),
    (["info", "nope"], "unknown evaluator 'nope'"),
    (["corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", "bleu"],
     "-e runs a command, and there is no command 'bleu': bleu is a built-in metric, which "
     "-m bleu runs in process (or -e bleu-evaluator over the protocol)"),
    (["reduce", DE_EN_HYP, "-e", "chrf"], "there is no command 'chrf'"),
])
def test_usage_errors_exit_2_with_a_hint(args, message):
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_stats_and_reduce_handle_several_metrics_in_one_run(tmp_path):
    assert "one or more metrics" in run_cli("stats", "--help").output
    written = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "ter", "-o", "-")
    assert written.exit_code == 0
    path = tmp_path / "three.stats"
    path.write_text(written.output)
    reduced = run_cli("reduce", str(path), "-f", "json")
    assert json_rows(reduced.output) == scores(*DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf",
                                               "ter")


# -- warnings -------------------------------------------------------------------------------

def tokenized(tmp_path):
    lines = [line[:-1] + " ." if line.endswith(".") else line for line in read_lines(DE_EN_HYP)]
    path = tmp_path / "tokenized.en"
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return str(path), sum(line.endswith(" .") for line in lines)


def test_bleu_warns_of_hypotheses_that_look_tokenized_as_sacrebleu_does(tmp_path):
    path, count = tokenized(tmp_path)
    assert count >= 100
    with pytest.warns(InputWarning) as caught:
        run_cli("corpus-score", *DE_EN_REFS, path, "-m", "bleu", "chrf")
    assert [str(warning.message) for warning in caught] == [
        f"{path}: bleu: {count} of 150 lines end in a tokenized period (' .'): it looks like "
        f"you forgot to detokenize, which may hurt BLEU (sacrebleu's warning; --force "
        f"silences it)"]


@pytest.mark.parametrize("args", [["-m", "bleu", "--force"], ["-m", "chrf", "ter"],
                                  ["-m", "bleu --force"]])
def test_no_tokenized_warning_with_force_or_without_bleu(tmp_path, args):
    path, _ = tokenized(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        assert run_cli("corpus-score", *DE_EN_REFS, path, *args).exit_code == 0


def test_a_warning_is_one_line_on_stderr(tmp_path):
    path, count = tokenized(tmp_path)
    done = subprocess.run([script("evalproto"), "corpus-score", *DE_EN_REFS, path],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert done.stderr == f"Warning: {path}: bleu: {count} of 150 lines end in a tokenized " \
                          f"period (' .'): it looks like you forgot to detokenize, which may " \
                          f"hurt BLEU (sacrebleu's warning; --force silences it)\n"


def test_a_json_lines_file_read_as_text_is_warned_about(tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "pred": line}) + "\n"
                                   for i, line in enumerate(read_lines(DE_EN_HYP))))
    with pytest.warns(InputWarning, match="`data_format`"):  # the API names its parameter
        result = run_cli("corpus-score", *DE_EN_REFS, str(predictions))
    assert result.exit_code == 0
    shown = subprocess.run([script("evalproto"), "corpus-score", *DE_EN_REFS, str(predictions)],
                           capture_output=True, text=True, timeout=120)
    assert shown.stderr == (
        f"Warning: {predictions}: every line is a JSON object, but the file is read as plain "
        f"text, one segment per line: if it is a dataset or predictions, give its format with "
        f"--data-format (dynabench or oasst)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)  # the format was given: no warning
        result = run_cli("corpus-score", *DE_EN_REFS, str(predictions), "--data-format", "text")
    assert result.exit_code == 0, result.output


def test_text_with_some_braces_is_not_warned_about(tmp_path):
    lines = read_lines(DE_EN_HYP)
    lines[0], lines[5] = '{"a": 1}', "{not json}"
    path = tmp_path / "braces.txt"
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    every = tmp_path / "all-braces.txt"
    every.write_text("".join("{" + line + "}\n" for line in read_lines(DE_EN_HYP)), "utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        for hyp in (path, every):
            assert run_cli("corpus-score", *DE_EN_REFS, str(hyp)).exit_code == 0


# -- a reader that stops early --------------------------------------------------------------

def into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """`evalproto ARGS` writing to a pipe whose reader has already gone (as `| head -1`
    leaves it)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run([script("evalproto"), *args], stdout=writer,
                              stderr=subprocess.PIPE, timeout=120, text=True)
    finally:
        os.close(writer)


def test_tab_separated_standard_input_is_one_system_per_column_as_in_sacrebleu():
    """`paste sys1 sys2 | evalproto corpus-score REF -` scored each joined line as one
    system, silently."""
    from sacrebleu.metrics import BLEU as SacreBLEU

    ref, one, two = (read_lines(path) for path in (DE_EN_REFS[0], DE_EN_HYP, DE_EN_HYP2))
    pasted = "".join(f"{a}\t{b}\n" for a, b in zip(one, two))
    rows = json_rows(run_cli("corpus-score", DE_EN_REFS[0], "-", "-f", "json",
                             input=pasted).output)
    assert [(row["system"], row["score"]) for row in rows] == [
        ("System 1", SacreBLEU().corpus_score(one, [ref]).score),
        ("System 2", SacreBLEU().corpus_score(two, [ref]).score)]
    ragged = pasted.replace("\t", " ", 1)  # line 1 holds one field, the others two
    result = run_cli("corpus-score", DE_EN_REFS[0], "-", input=ragged)
    assert result.exit_code == 1
    assert ("standard input: line 2: 2 tab-separated fields, but line 1 has 1: standard input "
            "holds one system per tab-separated column, as sacrebleu reads it") in result.output


@pytest.mark.parametrize("args", [
    ["list"], ["--help"], ["corpus-score", "--help"],
    ["corpus-score", *DE_EN_REFS, DE_EN_HYP, "-sl"],
    ["stats", *DE_EN_REFS, DE_EN_HYP, "-o", "-"],
    ["info", "bleu"],
])
def test_a_reader_that_stops_early_is_no_error(args):
    done = into_closed_pipe(*args)
    assert (done.returncode, done.stderr) == (0, "")


def test_an_error_is_still_an_error_when_the_reader_has_gone():
    done = into_closed_pipe("corpus-score", DE_EN_REFS[0], "missing.txt")
    assert done.returncode == 1 and "missing.txt: no such file" in done.stderr


def test_lm_score_into_a_closed_pipe(tmp_path):
    log = tmp_path / "we.jsonl"
    log.write_text("".join(json.dumps({"user": "u", "message": i // 3, "token": i % 3,
                                       "target": f"w{i}", "logp": -1.5}) + "\n"
                           for i in range(30)))
    assert into_closed_pipe("lm-score", str(log)).returncode == 0


def test_standard_output_flushed_at_exit_into_a_closed_pipe():
    """What is still buffered at exit is dropped too (Python would exit with 120)."""
    reader, writer = os.pipe()
    os.close(reader)
    code = ("import sys; from evalproto.cli import pipes; sys.stdout.write('x' * 100); "
            "pipes.flush_stdout()")
    buffered = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", code], stdout=writer, stderr=subprocess.PIPE,
                          timeout=60, env=buffered)
    os.close(writer)
    assert (done.returncode, done.stderr) == (0, b"")
