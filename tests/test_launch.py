"""The `evalproto` entry point starts -e evaluators before its slow imports, and a head
start is either taken by the run that names the same command, or killed."""

import gc
import json
import os
import subprocess
import sys
import time

import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_REFS,
    assert_ends,
    json_rows,
    process_state,
    running_commands,
    script,
)

from evalproto import EvaluatorProcess
from evalproto.base import processes
from evalproto.cli.launch import (
    METRIC_FLAGS,
    YOUNG_OBJECTS_PER_COLLECTION,
    head_start,
    option_values,
)


@pytest.fixture(autouse=True)
def no_head_start_left():
    yield
    processes.end_untaken()


def waiting(command, copy=False):
    return processes._started.get((tuple(command.split()), copy), [])


@pytest.mark.parametrize("args, expected", [
    (["-e", "a b", "-m", "bleu"], [("command", "a b"), ("in-process", "bleu")]),
    (["-ea b", "--metric=chrf", "--evaluator", "c"],
     [("command", "a b"), ("in-process", "chrf"), ("command", "c")]),
    (["--evaluator=x", "--", "-e", "y"], [("command", "x")]),
    (["-sl", "-ci", "--ref-field", "f", "-e"], [("command", "")]),
])
def test_option_values_reads_every_spelling_in_order(args, expected):
    assert option_values(args, METRIC_FLAGS) == expected


def test_a_head_start_is_taken_by_the_same_command():
    command = script("bleu-evaluator")
    head_start(["corpus-score", "r", "h", "-m", "chrf", "-e", command])
    (started,) = waiting(command)
    with EvaluatorProcess(command) as process:
        assert process._process is started
        assert process.stats_many([(["a b c d"], "a b c d")]).shape == (1, 10)
    assert waiting(command) == []


def test_jobs_start_as_many_copies():
    """Each told to run its kernels on one thread, as the pool's copies are: the pool
    takes them."""
    command = script("bleu-evaluator")
    head_start(["stats", "r", "h", "-o", "out", "--jobs=3", "-e", command])
    assert len(waiting(command, copy=True)) == 3 and waiting(command) == []
    started = list(waiting(command, copy=True))
    with EvaluatorProcess(command, copy=True) as process:
        assert process._process in started
    assert len(waiting(command, copy=True)) == 2


@pytest.mark.parametrize("jobs", ["\u00b2", "\u0661", "x"])  # ², Arabic-Indic one: not ASCII
def test_a_count_of_copies_that_is_not_ascii_digits_starts_one(jobs):
    """The run then refuses the value; the head start must not fail first."""
    command = script("bleu-evaluator")
    head_start(["corpus-score", "r", "h", "-j", jobs, "-e", command])
    assert len(waiting(command)) == 1 and waiting(command, copy=True) == []


def test_more_copies_than_the_run_allows_start_none():
    """-j 99999999999999999999 once started processes until memory ran out."""
    command = script("bleu-evaluator")
    head_start(["corpus-score", "r", "h", "-j", str(processes.most_copies() + 1), "-e", command])
    assert processes._started == {}


@pytest.mark.parametrize("args", [
    ["corpus-score", "r", "h", "-e", "CMD", "--scheduler", "local:2"],
    ["corpus-score", "r", "h", "-e", "CMD", "--scheduler=tcp://host:8786"],
    ["corpus-score", "-h", "-e", "CMD"],
    ["lm-score", "-e", "CMD"],
    ["--version", "corpus-score", "-e", "CMD"],
])
def test_no_head_start_where_the_run_would_not_use_it(args):
    command = script("bleu-evaluator")
    head_start([command if word == "CMD" else word for word in args])
    assert processes._started == {}


def test_a_command_that_cannot_start_is_left_for_the_run_to_report():
    head_start(["corpus-score", "r", "h", "-e", "no-such-evaluator-here", "-e", "'unclosed"])
    assert processes._started == {}


def test_untaken_head_starts_are_killed():
    head_start(["corpus-score", "r", "h", "-e", "sleep 60"])
    (started,) = waiting("sleep 60")
    processes.end_untaken()
    assert started.poll() is not None and processes._started == {}


def test_the_entry_point_starts_evaluators_before_importing_numpy_or_click():
    probe = ("import sys, evalproto.cli.launch; "
             "print([name for name in ('numpy', 'click') if name in sys.modules])")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert completed.stdout.strip() == "[]", completed.stderr


def test_a_plain_corpus_score_imports_nothing_it_does_not_use():
    """A corpus score of text files is timed as a whole process: it leaves out what
    only JSON Lines (msgspec), resampling (threads, threadpoolctl), file outputs
    (secrets), the report or -e commands (shutil) need."""
    probe = ("import runpy, sys; sys.argv = ['evalproto', 'corpus-score', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('evalproto', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "unused = ('msgspec', 'concurrent.futures', 'threadpoolctl', 'secrets', "
             "'matplotlib', 'evalproto.reports.html', 'shutil')\n"
             "print([name for name in unused if name in sys.modules], file=sys.stderr)")
    completed = subprocess.run([sys.executable, "-c", probe, *DE_EN_REFS, DE_EN_HYP],
                               capture_output=True, text=True, timeout=120)
    assert "BLEU" in completed.stdout, completed.stderr
    assert completed.stderr.strip().splitlines()[-1] == "[]", completed.stderr


def after_the_command_starts(expression, environment=None):
    """`expression` in a process where the `evalproto` entry point has run (--help)."""
    probe = ("import gc, os, runpy, sys; sys.argv = ['evalproto', '--help']\n"
             "try:\n    runpy.run_module('evalproto', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             f"print({expression}, file=sys.stderr)")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               env=environment, timeout=60)
    return completed.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("given, expected", [(None, "20"), ("28", "28")])
def test_blas_threads_spin_briefly_unless_the_environment_says_otherwise(given, expected):
    """numpy's OpenBLAS threads would spin a tenth of a second of a CPU away from its
    import on: the command sets a fraction of a millisecond before anything imports
    numpy, for the evaluators it starts too; a user's own setting stays."""
    environment = {name: value for name, value in os.environ.items()
                   if name != "OPENBLAS_THREAD_TIMEOUT"}
    if given is not None:
        environment["OPENBLAS_THREAD_TIMEOUT"] = given
    assert after_the_command_starts("os.environ.get('OPENBLAS_THREAD_TIMEOUT')",
                                    environment) == expected


def test_the_young_generation_is_collected_less_often_than_pythons_default():
    """The start-up's long-lived objects are not walked every 700 allocations; the older
    generations keep Python's thresholds."""
    default = gc.get_threshold()
    assert after_the_command_starts("gc.get_threshold()") == \
        str((YOUNG_OBJECTS_PER_COLLECTION, *default[1:]))
    assert YOUNG_OBJECTS_PER_COLLECTION > default[0]


def test_a_failed_run_leaves_no_head_started_evaluator(tmp_path):
    pid_file = tmp_path / "evaluator.pid"
    fake = tmp_path / "fake-evaluator"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    fake.chmod(0o755)
    completed = subprocess.run(
        [sys.executable, "-m", "evalproto", "corpus-score", DE_EN_REFS[0],
         str(tmp_path / "missing.hyp"), "-e", str(fake)],
        capture_output=True, text=True, timeout=60)
    assert completed.returncode == 1 and "missing.hyp" in completed.stderr
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.slow
def test_the_command_with_a_head_start_scores_as_in_process():
    def run(*metric):
        completed = subprocess.run(
            [sys.executable, "-m", "evalproto", "corpus-score", *DE_EN_REFS, DE_EN_HYP,
             "-f", "json", *metric], capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0, completed.stderr
        return json_rows(completed.stdout)[0]

    piped, in_process = run("-e", script("bleu-evaluator")), run("-m", "bleu")
    assert piped["score"] == in_process["score"]
    assert json.dumps(piped["stats"]) == json.dumps(in_process["stats"])


KEEPS_GROUPS = """
import subprocess, sys, time
from evalproto.base import processes
processes.keep_groups_after_exit()
kept = processes.spawn([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
ended = processes.spawn([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
processes.end(ended)  # ended here: the keeper lets it be
print(kept.pid, flush=True)
time.sleep(600)
"""


def test_a_process_killed_with_9_takes_its_evaluator_groups_with_it(tmp_path):
    """With keep_groups_after_exit (a server's workers), each group a process starts
    ends with that process, kill -9 included: a keeper process ends them."""
    mark = f"evalproto-kept-{os.getpid()}-{time.monotonic_ns()}"
    starter = subprocess.Popen([sys.executable, "-c", KEEPS_GROUPS, mark],
                               stdout=subprocess.PIPE, text=True)
    kept = int(starter.stdout.readline())
    assert process_state(kept) == "running"
    assert sorted(running_commands(mark)) == sorted([starter.pid, kept])  # not `ended`
    starter.kill()
    starter.wait()
    assert_ends(kept)
    deadline = time.monotonic() + 20
    while running_commands(mark):
        assert time.monotonic() < deadline, f"left running: {running_commands(mark)}"
        time.sleep(0.05)


@pytest.mark.parametrize("ending, expected", [("sys.exit(3)", 3),
                                              ("os.kill(os.getpid(), 9)", -9)])
@pytest.mark.parametrize("woken", ["by the exit", "by polling"])
def test_exit_status_waits_for_the_exit_and_leaves_the_process_unreaped(
        ending, expected, woken, monkeypatch):
    if woken == "by polling":  # where Linux gives no pidfd
        monkeypatch.setattr(processes, "_exit_descriptor", lambda pid: None)
    else:
        descriptor = processes._exit_descriptor(os.getpid())
        assert descriptor is not None  # Linux 5.3 or later: this case tests the pidfd
        os.close(descriptor)
    process = processes.spawn([sys.executable, "-c",
                               f"import os, sys, time; time.sleep(0.2); {ending}"])
    try:
        assert processes.exit_status(process, 0) is None  # still running
        assert processes.exit_status(process, 30) == expected
        assert process.returncode is None  # not reaped: its group can still be killed
        assert os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        assert processes.exit_status(process, 0) == expected
    finally:
        processes.end(process)
    assert process.returncode == expected
