"""The INFO hand-shake (evalproto.sources.handshake) and replies kept in step with the
requests: every way an evaluator command can answer INFO, or not, ends in a described
evaluator, an undescribed one, or one clear error; no result is returned while a reply
is missing or one too many; and nothing is started after a stop."""

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, assert_ends, fake, script

import evalproto
from evalproto.base import processes
from evalproto.base.errors import EvaluatorError, EvaluatorWarning
from evalproto.sources import handshake
from evalproto.sources import process as client
from evalproto.sources.handshake import Action, Event, State, classify, step
from evalproto.sources.pool import EvaluatorPool
from evalproto.sources.process import EvaluatorProcess
from evalproto.sources.specs import COMMAND, MetricSpec

ITEMS = [(["a b c"], "a b"), (["x y"], "x"), (["p"], "p q r")]


# -- the state machine ------------------------------------------------------------------

@pytest.mark.parametrize("line, event", [
    ('{"name": "x"}', Event.DESCRIPTION), ("  {", Event.DESCRIPTION),
    ("ERROR unknown command", Event.ERROR), (b" ERROR x", Event.ERROR),
    ("1 2 3", Event.OTHER), ("", Event.OTHER), ("[1]", Event.OTHER), (None, Event.ENDED),
])
def test_lines_are_classified(line, event):
    assert classify(line) is event


@pytest.mark.parametrize("state, event, expected", [
    (State.ASKED, Event.DESCRIPTION, (State.DESCRIBED, Action.DESCRIBE)),
    (State.ASKED, Event.ERROR, (State.UNDESCRIBED, Action.RESTART)),
    (State.ASKED, Event.ENDED, (State.UNDESCRIBED, Action.RESTART)),
    (State.ASKED, Event.OTHER, (State.ASKED, Action.REFUSE)),
    (State.ASKED, Event.SILENCE, (State.LATE, Action.WAIT)),
    (State.LATE, Event.DESCRIPTION, (State.DESCRIBED, Action.DESCRIBE)),
    (State.LATE, Event.ERROR, (State.UNDESCRIBED, Action.RESTART)),
    (State.LATE, Event.ENDED, (State.UNDESCRIBED, Action.RESTART)),
    (State.LATE, Event.OTHER, (State.UNDESCRIBED, Action.REPLY)),
])
def test_every_step_of_the_hand_shake(state, event, expected):
    assert step(state, event) == expected


@pytest.mark.parametrize("state", [State.DESCRIBED, State.UNDESCRIBED, State.STOPPED])
def test_a_settled_hand_shake_awaits_nothing(state):
    for event in Event:
        with pytest.raises(ValueError, match="no hand-shake step"):
            step(state, event)


def test_every_way_to_go_undescribed_has_a_reason():
    for (state, event), (_, action) in handshake.TRANSITIONS.items():
        if action in (Action.RESTART, Action.REPLY):
            assert handshake.reason(state, event, "'ERROR x'")


# -- evaluators that answer INFO late, or never --------------------------------------------

@pytest.mark.slow
def test_an_error_after_unanswered_info_is_the_first_segments_failure(tmp_path, monkeypatch):
    """It ignores INFO and refuses its first SCORE, going on with the rest: the ERROR is
    not taken for a late refusal of INFO (which left the client waiting for ever for a
    reply that never came); it is segment 1's failure, also without a timeout."""
    monkeypatch.setattr(client, "INFO_WAIT", 0.3)
    command = fake(tmp_path, 'print("ERROR cannot score this", flush=True); continue',
                   on_unknown="continue", when="scores == 1")
    for timeout in (None, 30):
        with pytest.warns(EvaluatorWarning, match="did not answer INFO within .* its first "
                                                  "reply was 'ERROR cannot score this'"):
            with pytest.raises(EvaluatorError) as caught:
                with evalproto.load(command=command, timeout=timeout) as metric:
                    metric.corpus_score(["a b", "x", "p q r"], [["a"], ["x"], ["p"]])
        assert str(caught.value).startswith("segment 1 of system: evaluator ")
        assert "request 1 (SCORE) was answered 'ERROR cannot score this'" in str(caught.value)


@pytest.mark.slow
def test_a_late_refusal_of_info_that_goes_on_is_not_a_failure(tmp_path, monkeypatch):
    """A slow --keep-going evaluator that refuses INFO: started again without INFO, it
    scores every segment."""
    monkeypatch.setattr(client, "INFO_WAIT", 0.3)
    command = fake(tmp_path, startup="time.sleep(1)")
    with pytest.warns(EvaluatorWarning, match="did not answer INFO within"):
        with EvaluatorProcess(command, timeout=20) as process:
            assert process.stats_many(ITEMS).tolist() == [[1, 3, 2], [1, 2, 1], [1, 1, 3]]


def test_an_evaluator_that_exits_on_its_first_score_after_ignoring_info(tmp_path, monkeypatch):
    monkeypatch.setattr(client, "INFO_WAIT", 0.3)
    command = fake(tmp_path, 'sys.exit(4)', on_unknown="continue", when="scores == 1")
    with pytest.warns(EvaluatorWarning, match="it exited without answering INFO"):
        with pytest.raises(EvaluatorError, match="exited before replying to request 1 "
                                                 r"\(SCORE\); exit status 4") as caught:
            with EvaluatorProcess(command, timeout=20) as process:
                process.stats_many(ITEMS)
    assert caught.value.item == 0


@pytest.mark.parametrize("on_info", ['print("ERROR no INFO", flush=True); sys.exit(3)',
                                     "sys.exit(3)", 'reply = "ERROR unknown command"'])
def test_an_evaluator_closed_unused_is_not_started_again_to_be_closed(tmp_path, on_info):
    """Asked for INFO and nothing else, an evaluator that does not know INFO (it exits on
    it, or refuses it) was started again without INFO only to be closed, with a warning
    about its missing description; an exit that INFO caused is no fault either."""
    starts = tmp_path / "starts"
    command = fake(tmp_path, startup=f"open({str(starts)!r}, 'a').write('started\\n')",
                   on_unknown=on_info)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        process = EvaluatorProcess(command, timeout=20)
        process.close()
    assert starts.read_text() == "started\n"
    assert process._process.poll() is not None


def test_a_described_evaluator_closed_unused_is_described(tmp_path):
    with EvaluatorProcess(script("bleu-evaluator"), timeout=20) as process:
        pass
    assert process.info["name"] == "bleu"


# -- replies in step -------------------------------------------------------------------------

DESCRIBED = textwrap.dedent("""
    import json, sys
    INFO = json.dumps({"name": "count", "stats": ["words"], "higher_is_better": True,
                       "signature": "count"})
    scores = 0
    for line in sys.stdin:
        command, *fields = [f.strip() for f in line.split("|||")]
        if command == "INFO":
            print(INFO, flush=True)
        elif command == "SCORE":
            scores += 1
            reply = str(len(fields[-1].split()))
            FAULT
            print(reply, flush=True)
        else:
            print(sum(float(x) for x in fields[0].split()), flush=True)
""")


def one_stat(directory: Path, fault: str, info: bool = True) -> str:
    program = DESCRIBED.replace("FAULT", fault)
    if not info:
        program = program.replace('print(INFO, flush=True)', 'print("ERROR no INFO", '
                                                              'flush=True)')
    path = directory / "count.py"
    path.write_text(program)
    return f"{sys.executable} {path}"


HYPS = ["one", "two words", "three words here", "and four words here", "five words are here now"]
REFS = [["r"]] * 5


def test_one_reply_written_twice_is_caught_before_a_result_is_returned(tmp_path):
    """One statistic: the stale SCORE reply passes the EVAL check, and 5.0 came back for
    the true 15.0, the fault seen only later by close()."""
    command = one_stat(tmp_path, 'if scores == 2: print(reply, flush=True)')
    with evalproto.load(command=command) as metric:
        with pytest.raises(EvaluatorError, match="out of step with the requests: where the "
                                                 "reply to INFO .* belongs came '5': it wrote "
                                                 "a line that no request asked for"):
            metric.corpus_score(HYPS, REFS)
    with evalproto.load(command=one_stat(tmp_path, "pass")) as metric:
        assert metric.corpus_score(HYPS, REFS).score == 15.0


def test_a_reply_left_out_is_caught_where_it_is_missing(tmp_path):
    command = one_stat(tmp_path, 'if scores == 2: continue')
    with evalproto.load(command=command, timeout=None) as metric:
        with pytest.raises(EvaluatorError) as caught:
            metric.corpus_score(HYPS, REFS)
    assert str(caught.value).startswith("segment 5 of system: ")
    assert "the reply to INFO (request 7) came where the reply to request 6 (SCORE) belongs: " \
           "it left a request unanswered" in str(caught.value)


def test_an_undescribed_evaluator_with_a_line_too_many_is_caught(tmp_path):
    """Without INFO nothing can follow the replies to check them: a line that has
    arrived beyond them (here, in the same write as the last reply) is still refused
    before the result is returned."""
    command = one_stat(tmp_path, 'if scores == 5: sys.stdout.write(reply + "\\n" + reply + '
                                 '"\\n"); sys.stdout.flush(); continue', info=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluatorWarning)
        with evalproto.load(command=command) as metric:
            with pytest.raises(EvaluatorError, match="it printed a line no request asked for: "
                                                     "'5'"):
                metric.stats_table(HYPS, REFS)


def test_a_cut_off_reply_is_named_not_the_missing_ones_after_it(tmp_path):
    """`1 2 3` without a line end, and an exit, from an evaluator of 10 statistics: the
    first segment's reply is what is wrong (it was blamed on segment 2's missing one)."""
    program = tmp_path / "short.py"
    program.write_text(textwrap.dedent("""
        import json, sys
        sys.stdin.readline()
        print(json.dumps({"name": "ten", "stats": [f"s{i}" for i in range(10)],
                          "higher_is_better": True, "signature": "ten"}), flush=True)
        sys.stdin.readline()
        sys.stdout.write("1 2 3")
    """))
    result = subprocess.run([script("evalproto"), "corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e",
                             f"{sys.executable} {program}"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: segment 1 of {DE_EN_HYP}: evaluator ")
    assert "the reply to request 2 (SCORE) has 3 numbers, expected 10: '1 2 3'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_failure_of_the_corpus_eval_says_it_is_the_corpus_score(tmp_path):
    command = one_stat(tmp_path, "pass").replace("count.py", "eval_fails.py")
    (tmp_path / "eval_fails.py").write_text(
        DESCRIBED.replace("FAULT", "pass").replace(
            "print(sum(float(x) for x in fields[0].split()), flush=True)",
            'print("ERROR no EVAL today", flush=True)'))
    result = subprocess.run([script("evalproto"), "corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e",
                             command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: the corpus score of {DE_EN_HYP}, {command}: "
                                    f"evaluator ")
    assert "(EVAL) was answered 'ERROR no EVAL today'" in result.stderr
    assert "item 1" not in result.stderr


# -- nothing started after a stop ----------------------------------------------------------------

def test_a_copy_waiting_for_info_when_another_fails_is_not_started_again(tmp_path,
                                                                         monkeypatch):
    """-e CMD -j 2: the first copy refuses its first SCORE while the second has not
    answered INFO yet. The pool stops both; the second's thread, finding its output
    closed, used to take it for an exit on INFO, warn falsely and start a third copy
    that outlived the run. (Whichever copy is first to start is the quick one.)"""
    monkeypatch.setattr(client, "INFO_WAIT", 1.0)
    started = []
    spawn = processes.spawn
    monkeypatch.setattr(processes, "spawn", lambda *args: started.append(spawn(*args))
                        or started[-1])
    first = tmp_path / "first"
    startup = (f'import pathlib; mine = not pathlib.Path({str(first)!r}).exists(); '
               f'pathlib.Path({str(first)!r}).touch(); None if mine else time.sleep(60)')
    describe = ('print(\'{"name": "f", "stats": ["a", "b", "c"], "higher_is_better": true, '
                '"signature": "f"}\', flush=True); continue')
    command = fake(tmp_path, 'print("ERROR not this one", flush=True); sys.exit(1)',
                   startup=startup, on_unknown=describe, when="scores == 1")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with pytest.raises(EvaluatorError, match="was answered 'ERROR not this one'"):
            with EvaluatorPool(MetricSpec(COMMAND, command), jobs=2, timeout=30) as pool:
                pool.stats_many(ITEMS * 4)
    assert not [warning for warning in said if "describe itself" in str(warning.message)]
    assert len(started) == 2
    for process in started:
        assert_ends(process.pid)


def test_a_stopped_evaluator_is_not_used_again(tmp_path):
    process = EvaluatorProcess([script("bleu-evaluator")], timeout=10)
    assert process.stats_many(ITEMS).shape == (3, 10)
    process.terminate()
    with pytest.raises(EvaluatorError, match="was stopped after an earlier failure or "
                                             "interruption: load it again"):
        process.stats_many(ITEMS)
    assert process.stat_names is not None and process.signature().startswith("case:mixed")


def test_the_checking_info_costs_nothing_in_the_numbers(tmp_path):
    """A described evaluator's rows with INFO after each batch equal the in-process rows,
    over many chunks."""
    from evalproto.evaluators.bleu import BLEU
    from evalproto.sources.base import corpus_rows

    refs = [[f"the cat number {i} sat"] for i in range(700)]
    hyps = [f"a cat {i} sat down" for i in range(700)]
    with EvaluatorProcess([script("bleu-evaluator")], timeout=30) as process:
        rows = corpus_rows(process, refs, {"s": hyps})["s"]
    assert np.array_equal(rows, BLEU().stats_many(list(zip(refs, hyps))))
