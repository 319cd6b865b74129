"""EvaluatorProcess against well-behaved and broken evaluators."""

import re
import sys
import time

import numpy as np
import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_REFS,
    assert_ends,
    fake,
    json_rows,
    read_lines,
    refusing,
    run_cli,
    script,
    wait_for_file,
)

from evalproto import EvaluatorError, EvaluatorProcess, InputError
from evalproto.base.errors import EvaluatorWarning
from evalproto.evaluators.bleu import BLEU
from evalproto.readers.text import SegmentReferences
from evalproto.sources import process as client
from evalproto.sources.base import corpus_rows

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


@pytest.mark.slow
def test_an_evaluator_that_ignores_info_is_used_without_it(tmp_path):
    with EvaluatorProcess(fake(tmp_path, on_unknown="continue"), timeout=1) as process:
        assert process.info is None
        assert process.stats_many(ITEMS).tolist()[0] == [1, 3, 2]


@pytest.mark.slow
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
                    "request 2 (SCORE) was answered 'ERROR cannot score this'"),
    "garbage": ('print("hello there", flush=True); continue',
                "the reply to request 2 (SCORE) is not finite numbers"),
    "nan": ('print("1 nan 2", flush=True); continue',
            "the reply to request 2 (SCORE) is not finite numbers"),
    "wrong length": ('print("1 2", flush=True); continue',
                     "the reply to request 2 (SCORE) has 2 numbers, expected 3"),
    "crash": ('sys.stderr.write("boom: out of memory\\n"); sys.exit(3)',
              "exited before replying to request 2 (SCORE); exit status 3; "
              "stderr: boom: out of memory"),
    "exit 0 early": ("sys.exit(0)", "exited before replying to request 2 (SCORE); exit status 0"),
    "extra line": ('print("1 1 1", flush=True)', "printed a line no request asked for"),
    "silence": ("time.sleep(60)", "no reply to request 2 (SCORE) within 2 s; still running, "
                                  "killed by evalproto"),
}


@pytest.mark.slow
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


def test_chunks_in_flight_give_the_rows_in_order_and_the_first_failure(tmp_path):
    """corpus_rows sends the next chunk (of 50 items at first, then more) while the evaluator
    scores the last one: the rows come back in order, and of two failures in chunks in
    flight together, the earlier segment's is the one reported, whether it is the
    evaluator's (an ERROR reply) or ours (a text that cannot be sent)."""
    refs = SegmentReferences([read_lines(path) for path in DE_EN_REFS])
    hyps = read_lines(DE_EN_HYP)
    with EvaluatorProcess([script("bleu-evaluator")], timeout=10) as process:
        rows = corpus_rows(process, refs, {"sys": hyps})["sys"]
    assert np.array_equal(rows, BLEU().stats_many(list(zip(refs, hyps))))
    for refused, unsendable, reported in ((60, 120, "segment 60 of sys"),
                                          (120, 60, "segment 60 of sys")):
        bad = list(hyps)
        bad[refused - 1], bad[unsendable - 1] = "BAD", "a ||| b"
        with pytest.raises((EvaluatorError, InputError)) as caught:
            with EvaluatorProcess(refusing(tmp_path), timeout=10) as process:
                corpus_rows(process, refs, {"sys": bad})
        assert str(caught.value).startswith(reported)


def test_a_chunk_that_cannot_be_sent_ends_the_sending(tmp_path):
    """Nothing after it reaches the evaluator: a second run on the same process gets
    its own rows, and the process ends with no reply left unread."""
    refs = [[" ".join(["w"] * (i % 7 + 1))] for i in range(200)]
    hyps = [" ".join(["w"] * (i % 5 + 1)) for i in range(200)]
    with EvaluatorProcess([script("bleu-evaluator")], timeout=10) as process:
        with pytest.raises(InputError, match="^segment 11 of s: cannot send 'a ||| b'"):
            corpus_rows(process, refs, {"s": hyps[:10] + ["a ||| b"] + hyps[11:]})
        rows = corpus_rows(process, refs, {"s": hyps})["s"]
    assert np.array_equal(rows, BLEU().stats_many(list(zip(refs, hyps))))


def test_corpus_score_reports_the_fault_without_a_traceback(tmp_path):
    command = fake(tmp_path, 'sys.stderr.write("died here\\n"); sys.exit(5)')
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "--timeout", "10")
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output
    assert "request 2 (SCORE)" in result.output and "exit status 5" in result.output
    assert "died here" in result.output and "Traceback" not in result.output


INFO_REPLY = ('print(json.dumps({"name": "fake", "stats": ["one", "ref_words", "hyp_words"], '
              '"higher_is_better": True, "signature": "fake:1"}), flush=True); continue')


def describing(directory, startup=""):
    return fake(directory, startup="import json; " + startup, on_unknown=INFO_REPLY)


def test_an_evaluator_that_answers_info_is_described(tmp_path):
    with EvaluatorProcess(describing(tmp_path), timeout=10) as process:
        assert process.stat_names == ("one", "ref_words", "hyp_words")
        assert process.signature() == "fake:1" and process.name == "fake"
        assert process.stats_many(ITEMS).tolist()[2] == [1, 1, 3]


def test_an_evaluator_that_answers_info_the_protocols_way_is_restarted(tmp_path):
    """ERROR and exit 1, as every evaluator built on evalproto does without --keep-going."""
    command = fake(tmp_path, on_unknown='print("ERROR unknown command", flush=True); sys.exit(1)')
    with pytest.warns(EvaluatorWarning, match="did not describe itself .it answered INFO with "
                                              "'ERROR unknown command'"):
        with EvaluatorProcess(command, timeout=10) as process:
            assert process.stats_many(ITEMS).tolist() == [[1, 3, 2], [1, 2, 1], [1, 1, 3]]
            assert process.stat_names == ("stat1", "stat2", "stat3")


@pytest.mark.slow
def test_a_slow_start_is_not_mistaken_for_ignoring_info(tmp_path, monkeypatch):
    """Its late reply to INFO comes first, and is taken as the description: the signature
    and stat names are the evaluator's own, not made up."""
    monkeypatch.setattr(client, "INFO_WAIT", 0.3)
    with EvaluatorProcess(describing(tmp_path, "time.sleep(2)"), timeout=20) as process:
        rows = process.stats_many(ITEMS)
        assert process.signature() == "fake:1"
        assert process.stat_names == ("one", "ref_words", "hyp_words")
    assert rows.tolist() == [[1, 3, 2], [1, 2, 1], [1, 1, 3]]


@pytest.mark.slow
def test_copies_that_ignore_info_cost_one_wait_together_not_one_each(tmp_path):
    """Copies started together share one INFO deadline: once the first has waited it
    out, the others have nothing left to wait (each waited its own 2 s before)."""
    command = fake(tmp_path, on_unknown="continue")
    copies = [EvaluatorProcess(command, timeout=2) for _ in range(3)]
    try:
        assert copies[0].stat_names is None  # waits out the 2 s
        started = time.monotonic()
        assert [copy.stat_names for copy in copies[1:]] == [None, None]
        assert time.monotonic() - started < 1.0
    finally:
        for copy in copies:
            copy.terminate()


@pytest.mark.slow
def test_a_pool_of_copies_that_ignore_info_still_scores(tmp_path):
    command = fake(tmp_path, on_unknown="continue")
    with pytest.warns(EvaluatorWarning, match="it did not answer INFO"):
        result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "-j", "3",
                         "--timeout", "2", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json_rows(result.output)[0]["signature"] == f"nrefs:2|command:{command}"


@pytest.mark.parametrize("reply, problem", [
    ('{"stats": 5}', "'stats' is not a non-empty list of stat names"),
    ('{"stats": ["a"], "name": "x", "signature": 3, "higher_is_better": true}',
     "'signature' is not a string"),
    ('{"stats": ["a"], "name": "x", "signature": "s", "higher_is_better": true, '
     '"score_name": 1}', "'score_name' is not a string"),
    ('{"stats": ["a"], "name": "x", "signature": "s", "higher_is_better": true, '
     '"extra_decimals": -1}', "'extra_decimals' is not a whole number from 0 to 20"),
    ('{"stats": ["a"], "name": "x", "signature": "s", "higher_is_better": true, '
     '"extra_decimals": true}', "'extra_decimals' is not a whole number from 0 to 20"),
    ("[1, 2]", "it is not a JSON object"),
    ("1 2 3", "it is not a JSON object"),
    ('{"stats": ' * 100000, "it is not a JSON object"),
])
def test_a_malformed_info_reply_is_one_clear_error(tmp_path, reply, problem):
    command = fake(tmp_path, on_unknown=f"reply = {reply!r}")
    with pytest.raises(EvaluatorError, match="its reply to INFO, .* is not a description: "
                                             + re.escape(problem)):
        with EvaluatorProcess(command, timeout=10) as process:
            process.stats_many(ITEMS)


def test_a_reply_line_without_end_is_capped(tmp_path):
    command = fake(tmp_path, 'sys.stdout.write("1" * 70_000_000); sys.stdout.flush(); '
                             'time.sleep(60)')
    with pytest.raises(EvaluatorError, match=r"its reply to request 2 \(SCORE\) is longer than "
                                             r"64 MiB"):
        with EvaluatorProcess(command, timeout=30) as process:
            process.stats_many(ITEMS)


@pytest.mark.parametrize("timeout", [10, None])
def test_a_background_child_holding_the_output_open_is_killed_at_the_end(tmp_path, timeout,
                                                                         monkeypatch):
    """A wrapper that exits cleanly while its background child keeps its stdout open:
    the run ends (also with no timeout), and the child goes with the group."""
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("PID_FILE", str(pid_file))
    startup = ('child = subprocess.Popen(["sleep", "300"]); '
               'open(os.environ["PID_FILE"], "w").write(str(child.pid))')
    with EvaluatorProcess(fake(tmp_path, startup=startup), timeout=timeout) as process:
        assert process.stats_many(ITEMS).shape == (3, 3)
    child = wait_for_file(pid_file)
    assert_ends(child)


@pytest.mark.slow
def test_an_evaluator_that_does_not_exit_at_the_end_of_its_input_is_killed(tmp_path):
    lingering = tmp_path / "lingering.py"
    lingering.write_text("import sys, time\n"
                         "for line in sys.stdin:\n"
                         "    print('1 2', flush=True)\n"
                         "time.sleep(300)\n")
    process = EvaluatorProcess([sys.executable, str(lingering)], timeout=10, probe_info=False)
    assert process.stats_many(ITEMS).shape == (3, 2)
    with pytest.raises(EvaluatorError, match="it did not exit within 5 s after the end of its "
                                             "input; still running, killed by evalproto"):
        process.close()
    assert_ends(process._process.pid)


def test_a_writer_thread_is_started_before_the_next_one_can_join_it(tmp_path, monkeypatch):
    """Each batch of requests is written by a thread that first joins the thread of the
    batch before. That thread was stored before it was started, so a batch handed over
    from another thread meanwhile joined a thread not started yet ("cannot join thread
    before it is started", about 1 run in 5 of a -j test). Here the first start is held
    back while a second batch is handed over from another thread."""
    import threading

    started = threading.Event()
    real_start = threading.Thread.start

    def slow_first_start(thread):
        if not started.is_set():
            started.set()
            time.sleep(0.3)
        real_start(thread)

    failures = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    with EvaluatorProcess(fake(tmp_path), timeout=10, probe_info=False) as process:
        monkeypatch.setattr(client.threading.Thread, "start", slow_first_start)
        first = threading.Thread(target=process._send, args=(["SCORE ||| a ||| a\n"],))
        real_start(first)
        assert started.wait(10)
        _, second, _ = process._send(["SCORE ||| b ||| b\n"])
        first.join()
        second.join()
        monkeypatch.undo()
        replies = process._replies_to(1, 2, "SCORE", False)
        assert len(replies) == 2
    assert failures == []
