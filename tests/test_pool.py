"""-j/--jobs: N copies of a metric give exactly the numbers of one."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_HYP2,
    DE_EN_REFS,
    assert_ends,
    fake,
    json_rows,
    process_state,
    read_lines,
    refusing,
    run_cli,
    running_commands,
    script,
    with_bad_line,
)

from evalproto import EvaluatorError
from evalproto.sources.pool import chunks


def rows(*args):
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", DE_EN_HYP2, *args,
                     "-f", "json")
    assert result.exit_code == 0, result.output
    return json_rows(result.output)


@pytest.mark.slow
@pytest.mark.parametrize("metric", [["-m", "bleu"], ["-m", "ter"], ["-m", "chrf -cw 2"],
                                    ["-e", "bleu-evaluator"]])
def test_parallel_copies_give_the_numbers_of_one(metric):
    metric = [metric[0], script(metric[1]) if metric[0] == "-e" else metric[1]]
    one = rows(*metric, "--confidence", "--confidence-n", "100")
    for jobs in ("2", "3"):
        assert rows(*metric, "--confidence", "--confidence-n", "100", "-j", jobs) == one


def test_chunks_keep_the_order_and_cover_everything():
    items = list(range(10))
    for parts in (1, 2, 3, 4, 10, 12):
        pieces = chunks(items, parts)
        assert [item for _, piece in pieces for item in piece] == items
        assert [start for start, _ in pieces] == [items.index(piece[0]) for _, piece in pieces]
        assert len(pieces) <= parts and all(piece for _, piece in pieces)
    assert chunks([], 3) == []


def test_a_failing_copy_is_the_same_clear_error(tmp_path):
    command = fake(tmp_path, 'sys.stderr.write("copy crashed\\n"); sys.exit(9)')
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "-j", "2",
                     "--timeout", "10")
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output and "exit status 9" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_a_refused_segment_is_named_whatever_the_jobs(tmp_path, jobs):
    """Each copy numbers its own requests; the message names the segment and file."""
    bad = with_bad_line(tmp_path, 100)
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, "-i", bad,
                     "-e", refusing(tmp_path), "-j", jobs, "--timeout", "10")
    assert result.exit_code == 1
    assert f"Error: segment 100 of {bad}: evaluator " in result.output
    assert "was answered 'ERROR cannot score BAD'" in result.output


def test_stats_files_are_the_same_with_jobs(tmp_path):
    for name, jobs in (("one", "1"), ("two", "2")):
        result = run_cli("stats", *DE_EN_REFS, DE_EN_HYP, "-m", "ter", "-j", jobs,
                         "-o", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    one, two = ((tmp_path / name).read_text() for name in ("one", "two"))
    assert one == two


def test_a_pool_worker_runs_its_kernels_on_one_thread(monkeypatch):
    """-j N copies are N processes already: each copy's kernel calls take one thread, and
    so do those of the processes it starts (tests/test_threads.py runs real copies)."""
    from evalproto.base.compiled import THREADS_VARIABLE
    from evalproto.evaluators.native import kernels
    from evalproto.sources import pool
    from evalproto.sources.specs import MetricSpec

    monkeypatch.setattr(pool, "ignore_interrupts", lambda: None)  # this is no worker
    monkeypatch.setenv(THREADS_VARIABLE, "8")  # what the worker sets is undone after
    monkeypatch.setattr(pool, "_WORKER_SOURCE", None)
    pool._start_worker(MetricSpec("in-process", "bleu"), threading.Barrier(1))
    assert os.environ[THREADS_VARIABLE] == "1"
    module = kernels()
    assert module.set_threads(module.MAX_THREADS) == 1


def items_of(count):
    refs, hyps = (read_lines(path) for path in (DE_EN_REFS[0], DE_EN_HYP))
    return [([ref], hyp) for ref, hyp in zip(refs, hyps)][:count]


def test_a_worker_that_died_is_an_error_not_a_wait_forever():
    """multiprocessing.Pool waited for a dead worker's part forever (and started another
    worker in its place): now the next parts are refused with what happened."""
    from evalproto.sources.pool import EvaluatorPool
    from evalproto.sources.specs import MetricSpec

    # the pool's write to the killed worker must raise, not kill pytest (see below)
    assert signal.getsignal(signal.SIGPIPE) is signal.SIG_IGN
    with EvaluatorPool(MetricSpec("in-process", "chrf"), 2, None) as copies:
        first = copies.stats_many(items_of(40))
        assert first.shape == (40, len(copies.stat_names))
        (worker, *_) = copies._processes._processes.values()
        worker.kill()
        assert_ends(worker.pid)
        with pytest.raises(EvaluatorError, match="a -j worker process ended before it gave "
                                                 "its rows"):
            deadline = time.monotonic() + 30  # the pool sees the death as it comes
            while time.monotonic() < deadline:
                copies.stats_many(items_of(40))


def test_a_module_that_takes_sigpipe_at_collection_leaves_the_tests_pythons():
    """test_whitespace_rule.py imports sacrebleu.sacrebleu, which sets SIGPIPE to the
    default as it is imported, at collection: the test above then died with pytest (exit
    141, no summary) when the pool wrote to the worker it had killed. Collected
    together, the test passes and pytest says so."""
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_whitespace_rule.py", "tests/test_pool.py",
         "-k", "a_worker_that_died_is_an_error"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "\n1 passed" in ran.stdout


def test_a_script_without_a_main_guard_gets_an_error_not_endless_workers(tmp_path):
    """jobs=2 from a script whose work is not under `if __name__ == "__main__":`: each
    spawned worker imports the script and fails. multiprocessing.Pool started new workers
    without end (a thousand in a few minutes); the run must end with the cause named, and
    every worker with it."""
    mark = f"evalproto-test-{os.getpid()}-{time.monotonic_ns()}"
    (tmp_path / "score.py").write_text(
        "import evalproto\n"
        f"refs = open({DE_EN_REFS[0]!r}).read().splitlines()\n"
        f"hyps = open({DE_EN_HYP!r}).read().splitlines()\n"
        "print(evalproto.compare({'a': hyps}, ref_streams=[refs], metrics=['bleu'], jobs=2))\n")
    ran = subprocess.run([sys.executable, str(tmp_path / "score.py")], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path, env={**os.environ, "MARK": mark})
    assert ran.returncode == 1
    assert ("from a script, `jobs` > 1 starts workers that import the script, so its work "
            "must be under `if __name__ == \"__main__\":`") in ran.stderr
    deadline = time.monotonic() + 30
    while marked_processes(mark):
        assert time.monotonic() < deadline, f"left running: {marked_processes(mark)}"
        time.sleep(0.1)


def marked_processes(mark):
    """The processes whose environment holds MARK=mark (the test's, and its children's)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as stream:
                if f"MARK={mark}".encode() in stream.read().split(b"\0"):
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return [pid for pid in found if process_state(pid) == "running"]


def test_ending_copies_whose_children_left_their_group_takes_no_wait(tmp_path):
    """terminate() (an error, Ctrl-C) waited for each copy's output to be read to its
    end, up to 5 s a pipe: 10 s a copy whose child had left the process group holding
    them open. It waits for none of it now."""
    from evalproto.sources.pool import EvaluatorPool
    from evalproto.sources.specs import MetricSpec

    mark = f"evalproto-escaped-{os.getpid()}-{time.monotonic_ns()}"
    command = fake(tmp_path, startup=(
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {mark!r}],"
        f" start_new_session=True)"))
    try:
        copies = EvaluatorPool(MetricSpec("command", command), 3, 30)
        assert copies.stats_many(ITEMS_OF_THREE).tolist() == [[1, 3, 2], [1, 2, 1], [1, 1, 3]]
        assert len(running_commands(mark)) >= 3  # one a copy (two, if started again)
        began = time.monotonic()
        copies.terminate()
        assert time.monotonic() - began < 5  # was 30 s or more
    finally:
        for pid in running_commands(mark):
            os.kill(pid, signal.SIGKILL)


ITEMS_OF_THREE = [(["a b c"], "a b"), (["d e"], "d"), (["f"], "f g h")]
