"""Models as processes (evalproto.sources.models): a program that reads an example a line
and writes a reply a line, run on a dataset's examples; every reply checked, every
failure naming the example (and the key), the model stopped group and all, and what
the run measured (throughput, peak memory)."""

import json
import os
import sys
import textwrap
import time

import pytest
from conftest import assert_ends, running_commands

from evalproto.sources.models import ModelError, run_model

EXAMPLES = [(f"ex{number}", {"context": f"Sentence number {number}, ünïcode.",
                             "hypothesis": "x" * number}) for number in range(1, 41)]

MODEL = textwrap.dedent("""
    import json, os, sys, time
    FAULT_SETUP
    for number, line in enumerate(sys.stdin, 1):
        example = json.loads(line)
        reply = {"id": example["id"], "pred": example["context"].split()[2].strip(","),
                 "prob": [0.25, 0.75]}
        FAULT
        print(json.dumps(reply), flush=True)
""")


def model(tmp_path, fault="pass", setup="pass", name="model.py"):
    path = tmp_path / name
    path.write_text(MODEL.replace("FAULT_SETUP", setup).replace("FAULT", fault))
    return f"{sys.executable} {path}"


def test_a_model_replies_to_every_example_in_order(tmp_path):
    run = run_model(model(tmp_path), EXAMPLES, ["prob"], timeout=30)
    assert [reply["id"] for reply in run.replies] == [key for key, _ in EXAMPLES]
    assert run.replies[4] == {"id": "ex5", "pred": "5", "prob": [0.25, 0.75]}
    assert run.throughput > 0 and 0 < run.memory_gib < 1
    assert [json.loads(line) for line in run.predictions_jsonl().decode().splitlines()] == (
        run.replies)


@pytest.mark.parametrize("fault, said", [
    ('reply.pop("prob") if number == 3 else None',
     "example 3 (id 'ex3'): the reply has no key 'prob'"),
    ('reply.pop("pred") if number == 2 else None',
     "example 2 (id 'ex2'): the reply has no key 'pred'"),
    ('reply["id"] = "ex99" if number == 4 else reply["id"]',
     "example 4 (id 'ex4'): the reply names id 'ex99'"),
    ('reply = [reply] if number == 5 else reply',
     "example 5 (id 'ex5'): the reply is not a JSON object"),
    ('reply["pred"] = 7 if number == 6 else reply["pred"]',
     "example 6 (id 'ex6'): the reply's 'pred' is int; expected a string"),
    ('print("{oops", flush=True) if number == 7 else None',
     "example 7 (id 'ex7'): the reply is not JSON: '{oops'"),
    ('sys.exit(3) if number == 8 else None',
     "example 8 (id 'ex8'): the model's output ended before its reply (exit status 3)"),
])
def test_a_bad_reply_fails_the_run_naming_the_example(tmp_path, fault, said):
    with pytest.raises(ModelError) as caught:
        run_model(model(tmp_path, fault), EXAMPLES, ["prob"], timeout=30)
    assert said in str(caught.value)


def test_a_silent_model_is_stopped_at_its_timeout_with_what_it_started(tmp_path):
    mark = f"evalproto-hung-{os.getpid()}-{time.monotonic_ns()}"
    setup = (f"import subprocess; subprocess.Popen([sys.executable, '-c', "
             f"'import time; time.sleep(600)', {mark!r}])")
    command = model(tmp_path, "time.sleep(600) if number == 2 else None", setup)
    began = time.monotonic()
    with pytest.raises(ModelError) as caught:
        run_model(f"{command} {mark}", EXAMPLES, ["prob"], timeout=1)
    assert "example 2 (id 'ex2'): no reply within 1 s (the model's --timeout); the model " \
           "was stopped" in str(caught.value)
    assert time.monotonic() - began < 30
    deadline = time.monotonic() + 20
    while running_commands(mark):
        assert time.monotonic() < deadline, f"left running: {running_commands(mark)}"
        time.sleep(0.05)


def test_what_a_model_says_on_stderr_is_in_its_failure(tmp_path):
    command = model(tmp_path, 'print("the weights are missing", file=sys.stderr, '
                              'flush=True); sys.exit(1)')
    with pytest.raises(ModelError, match="stderr: the weights are missing"):
        run_model(command, EXAMPLES, ["prob"], timeout=30)


def test_a_model_that_says_more_or_fails_at_its_end_fails_its_run(tmp_path):
    extra = model(tmp_path, "pass", "import atexit; atexit.register(lambda: print('bye'))")
    with pytest.raises(ModelError, match="a line after its last reply: 'bye'"):
        run_model(extra, EXAMPLES[:3], ["prob"], timeout=30)
    failing = model(tmp_path, "pass", "import atexit; atexit.register(lambda: os._exit(4))",
                    name="failing.py")
    with pytest.raises(ModelError, match="exited with status 4 at the end of its input"):
        run_model(failing, EXAMPLES[:3], ["prob"], timeout=30)


def test_a_command_that_cannot_start_is_said(tmp_path):
    with pytest.raises(ModelError, match="cannot start the model 'no-such-program x': "
                                         "command not found"):
        run_model("no-such-program x", EXAMPLES, [], timeout=30)


def test_throughput_and_memory_are_measured(tmp_path):
    """20 ms an example is under 50 examples a second, whatever else the clock holds;
    300 MB held while it runs is 0.28 GiB at least."""
    slow = run_model(model(tmp_path, "time.sleep(0.02)"), EXAMPLES, ["prob"], timeout=30)
    assert slow.throughput < 50
    assert 0.8 <= slow.seconds < 30  # 40 examples, 20 ms each at least
    big = run_model(model(tmp_path, "pass", "held = bytearray(300 << 20)",
                          name="big.py"), EXAMPLES[:5], ["prob"], timeout=30)
    assert big.memory_gib >= 0.28


def test_memory_counts_the_models_children(tmp_path):
    """A model that is a wrapper (a shell, a launcher) is measured with what it starts."""
    inner = tmp_path / "inner.py"
    inner.write_text(MODEL.replace("FAULT_SETUP", "held = bytearray(200 << 20)")
                     .replace("FAULT", "time.sleep(0.05)"))
    run = run_model(f"sh -c '{sys.executable} {inner}; exit 0'", EXAMPLES[:10], ["prob"],
                    timeout=30)
    assert run.memory_gib >= 0.18


def test_a_model_sees_no_token_of_the_service(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPROTO_ADMIN_TOKEN", "admin-secret-0123456789")
    monkeypatch.setenv("EVALPROTO_TOKEN", "team-secret-0123456789")
    monkeypatch.setenv("OTHER", "kept")
    command = model(tmp_path, 'reply["pred"] = ",".join(sorted(name for name in os.environ '
                              'if name in ("EVALPROTO_ADMIN_TOKEN", "EVALPROTO_TOKEN", '
                              '"OTHER")))')
    run = run_model(command, EXAMPLES[:1], ["prob"], timeout=30)
    assert run.replies[0]["pred"] == "OTHER"


def test_the_model_process_has_ended_when_its_run_returns(tmp_path):
    mark = f"evalproto-done-{os.getpid()}-{time.monotonic_ns()}"
    run_model(f"{model(tmp_path)} {mark}", EXAMPLES[:3], ["prob"], timeout=30)
    for pid in running_commands(mark):
        assert_ends(pid)
