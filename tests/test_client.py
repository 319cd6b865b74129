"""EvaluatorProcess against well-behaved and broken evaluators."""

import sys

import numpy as np
import pytest

from conftest import DE_EN_HYP, DE_EN_REFS, fake, read_lines, run_cli, script
from evalproto import EvaluatorError, EvaluatorProcess, InputError
from evaluators.bleu import BLEU

ITEMS = [(["a b c"], "a b"), (["d e"], "d"), (["f"], "f g h")]


def test_a_well_behaved_evaluator_without_info(tmp_path):
    with EvaluatorProcess(fake(tmp_path), timeout=10) as process:
        rows = process.stats_many(ITEMS)
        assert process.info is None and process.stat_names == ("stat1", "stat2", "stat3")
        assert rows.tolist() == [[1, 3, 2], [1, 2, 1], [1, 1, 3]]
        assert process.score(rows.sum(axis=0)) == 15.0


def test_bleu_evaluator_over_the_pipe_equals_in_process():
    refs = list(zip(*(read_lines(path) for path in DE_EN_REFS)))
    items = list(zip(refs, read_lines(DE_EN_HYP)))
    with EvaluatorProcess([script("bleu-evaluator"), "--tokenize", "intl"]) as process:
        rows = process.stats_many(items)
        score = process.score(rows.sum(axis=0))
        assert process.stat_names == BLEU().stat_names
    bleu = BLEU(tokenize="intl")
    expected = bleu.stats_many(items)
    assert np.array_equal(rows, expected)
    assert score == bleu.checked_score(expected.sum(axis=0))


def test_an_evaluator_that_exits_on_info_is_restarted_without_it(tmp_path):
    with EvaluatorProcess(fake(tmp_path, on_unknown="sys.exit(4)"), timeout=10) as process:
        assert process.info is None
        assert process.stats_many(ITEMS).shape == (3, 3)


def test_an_evaluator_that_ignores_info_is_restarted_without_it(tmp_path):
    with EvaluatorProcess(fake(tmp_path, on_unknown="continue"), timeout=1) as process:
        assert process.info is None
        assert process.stats_many(ITEMS).tolist()[0] == [1, 3, 2]


def test_the_first_copy_ending_late_does_not_disturb_the_restarted_one(tmp_path):
    """A process that outlives the evaluator keeps its stdout open, so the first copy's
    output ends (at 2.5 s) while the restarted copy is answering (its second SCORE
    takes 1.5 s): that end belongs to the first copy's reader alone."""
    holder = 'subprocess.Popen(["sleep", "2.5"], start_new_session=True)'
    command = fake(tmp_path, "time.sleep(1.5)", startup=holder, on_unknown="continue")
    with EvaluatorProcess(command, timeout=2) as process:
        assert process.info is None
        assert process.stats_many(ITEMS).tolist() == [[1, 3, 2], [1, 2, 1], [1, 1, 3]]


FAULTS = {
    "error reply": ('print("ERROR cannot score this", flush=True); continue',
                    "request 3 (SCORE) was answered 'ERROR cannot score this'"),
    "garbage": ('print("hello there", flush=True); continue',
                "the reply to request 3 (SCORE) is not finite numbers"),
    "nan": ('print("1 nan 2", flush=True); continue',
            "the reply to request 3 (SCORE) is not finite numbers"),
    "wrong length": ('print("1 2", flush=True); continue',
                     "the reply to request 3 (SCORE) has 2 numbers, expected 3"),
    "crash": ('sys.stderr.write("boom: out of memory\\n"); sys.exit(3)',
              "exited before replying to request 3 (SCORE); exit status 3; "
              "stderr: boom: out of memory"),
    "exit 0 early": ("sys.exit(0)", "exited before replying to request 3 (SCORE); exit status 0"),
    "extra line": ('print("1 1 1", flush=True)', "printed a line no request asked for"),
    "silence": ("time.sleep(60)", "no reply to request 3 (SCORE) within 2 s; still running, "
                                  "killed by evalproto"),
}


@pytest.mark.parametrize("name", FAULTS)
def test_every_fault_is_one_clear_error(tmp_path, name):
    fault, message = FAULTS[name]
    command = fake(tmp_path, fault)
    with pytest.raises(EvaluatorError) as caught:
        with EvaluatorProcess(command, timeout=2) as process:
            process.stats_many(ITEMS)
    assert f"evaluator {command!r} failed: " in str(caught.value)
    assert message in str(caught.value)
    assert process._process.poll() is not None, "the evaluator must not be left running"


def test_an_error_inside_a_batch_of_replies_names_its_request(tmp_path):
    """All replies arrive in one write, so they are taken as one batch."""
    evaluator = tmp_path / "batching.py"
    evaluator.write_text(
        "import sys\n"
        "requests = [sys.stdin.readline() for _ in range(5)]\n"
        "sys.stdout.write('1\\n2\\n3\\n  ERROR the fourth\\n5\\n')\n"
        "sys.stdout.flush()\n")
    process = EvaluatorProcess([sys.executable, str(evaluator)], timeout=10, probe_info=False)
    with pytest.raises(EvaluatorError, match=r"request 4 \(SCORE\) was answered "
                                             r"'ERROR the fourth'"):
        with process:
            process.stats_many([(["r"], "h")] * 5)


def test_megabytes_of_stderr_do_not_block_scoring(tmp_path):
    noisy = 'sys.stderr.write("x" * 5_000_000); sys.stderr.flush()'
    with EvaluatorProcess(fake(tmp_path, noisy), timeout=10) as process:
        rows = process.stats_many(ITEMS * 200)
    expected = [[1, len(refs[0].split()), len(hyp.split())] for refs, hyp in ITEMS * 200]
    assert rows.tolist() == expected


def test_command_not_found():
    with pytest.raises(EvaluatorError, match="command not found: 'no-such-evaluator-here'"):
        EvaluatorProcess("no-such-evaluator-here --flag")


def test_text_that_would_desynchronize_the_stream_is_refused_before_sending(tmp_path):
    with EvaluatorProcess(fake(tmp_path), timeout=10) as process:
        with pytest.raises(InputError, match="contains a newline"):
            process.stats_many([(["two\nlines"], "hyp")])
        assert process.stats_many(ITEMS).shape == (3, 3)


def test_corpus_score_reports_the_fault_without_a_traceback(tmp_path):
    command = fake(tmp_path, 'sys.stderr.write("died here\\n"); sys.exit(5)')
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "--timeout", "10")
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output
    assert "request 3 (SCORE)" in result.output and "exit status 5" in result.output
    assert "died here" in result.output and "Traceback" not in result.output
