"""Faults end in one clear error, with no process, partial file or wrong number left."""

import gzip
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List

import pytest
from conftest import (
    DE_EN_HYP,
    DE_EN_REFS,
    assert_ends,
    fake,
    json_rows,
    process_state,
    read_lines,
    run_cli,
    wait_for_file,
)
from sacrebleu.metrics import BLEU as SacreBLEU

from evalproto import EvaluatorError, EvaluatorProcess

ITEMS = [(["a b c"], "a b"), (["d e"], "d"), (["f"], "f g h")]
WRITE_PID = 'open(os.environ["PID_FILE"], "w").write(str(os.getpid()))'


def test_output_before_the_first_request_is_caught(tmp_path):
    command = fake(tmp_path, startup='print("Loading model... done", flush=True)')
    with pytest.raises(EvaluatorError, match=r"its reply to INFO, 'Loading model... done', is not "
                                             r"a description"):
        with EvaluatorProcess(command, timeout=5) as process:
            process.stats_many(ITEMS)


@pytest.mark.slow
def test_a_failed_evaluator_leaves_no_orphaned_children(tmp_path, monkeypatch):
    pid_file = tmp_path / "grandchild.pid"
    monkeypatch.setenv("PID_FILE", str(pid_file))
    spawn = ('child = subprocess.Popen(["sleep", "60"]); '
             'open(os.environ["PID_FILE"], "w").write(str(child.pid)); time.sleep(60)')
    with pytest.raises(EvaluatorError, match="no reply to request 2"):
        with EvaluatorProcess(fake(tmp_path, spawn), timeout=2) as process:
            process.stats_many(ITEMS)
    assert process_state(process._process.pid) == "gone"  # reaped by terminate()
    assert_ends(wait_for_file(pid_file))


FAULTS = {
    "crash": ('sys.stderr.write("Segmentation fault\\n"); sys.exit(139)', "exit status 139",
              "Segmentation fault"),
    "early exit": ('sys.stderr.write("bye\\n"); sys.exit(0)', "exit status 0", "bye"),
    "wrong length": ('sys.stderr.write("oops\\n"); print("1 2 3 4", flush=True); continue',
                     "has 4 numbers, expected 3", "oops"),
    "silence": ('sys.stderr.write("thinking\\n"); sys.stderr.flush(); time.sleep(60)',
                "no reply to request 2 (SCORE) within 2 s", "thinking"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", FAULTS)
def test_corpus_score_names_command_request_status_and_stderr(tmp_path, monkeypatch, name):
    fault, problem, stderr_tail = FAULTS[name]
    monkeypatch.setenv("PID_FILE", str(tmp_path / "evaluator.pid"))
    command = fake(tmp_path, fault, startup=WRITE_PID)
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-e", command, "--timeout", "2",
                     "-o", str(tmp_path / "scores.json"))
    assert result.exit_code == 1
    assert f"evaluator {command!r} failed" in result.output
    assert problem in result.output and f"stderr: {stderr_tail}" in result.output
    assert "request 2" in result.output and "Traceback" not in result.output
    assert_ends(wait_for_file(tmp_path / "evaluator.pid"))
    assert not (tmp_path / "scores.json").exists()


SIGNAL_CASES = [
    # (how the signal is sent, extra arguments, seconds after the evaluator started)
    ("SIGINT to the job", ["-m", "ter", "-j", "2"], 0.0),
    ("SIGINT to the job", ["-m", "ter", "-j", "2"], 0.4),
    ("SIGINT to the job", ["-m", "bleu"], 0.0),
    ("SIGINT to the client", ["-m", "bleu"], 0.5),
    ("SIGTERM to the client", ["-m", "ter", "-j", "2"], 0.3),
    # the -e copies of a pool wait for replies that never come (--timeout 0)
    ("SIGTERM to the client", ["-j", "2"], 1.0),
    ("SIGINT to the job", ["-m", "bleu", "--scheduler", "local:2"], 0.5),
    ("SIGTERM to the client", ["-m", "bleu", "--scheduler", "local:2"], 1.0),
]


@pytest.mark.slow
@pytest.mark.parametrize("how, args, delay", SIGNAL_CASES)
def test_ctrl_c_or_sigterm_ends_the_run_with_one_line_and_nothing_left(tmp_path, how, args,
                                                                      delay):
    """A terminal's Ctrl-C reaches every process of the job (-j workers, Dask workers);
    SIGTERM only the client. Either way: one "Aborted!" line, exit 1, no traceback from
    any process, no leaked semaphore, and no process of the job left running."""
    pid_file = tmp_path / "evaluator.pid"
    describe = ('print(\'{"name": "f", "stats": ["a", "b", "c"], "higher_is_better": true, '
                '"signature": "f"}\', flush=True); continue')
    command = fake(tmp_path, "time.sleep(300)", startup=WRITE_PID, when="True",
                   on_unknown=describe)
    client = subprocess.Popen(
        [sys.executable, "-m", "evalproto", "corpus-score", *DE_EN_REFS, DE_EN_HYP, *args,
         "-e", command, "--timeout", "0"],
        env={**os.environ, "PID_FILE": str(pid_file)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    wait_for_file(pid_file, seconds=60)  # the run is under way, its handlers set
    time.sleep(delay)
    if how == "SIGINT to the job":
        os.killpg(client.pid, signal.SIGINT)
    else:
        client.send_signal(signal.SIGINT if how.startswith("SIGINT") else signal.SIGTERM)
    stdout, stderr = client.communicate(timeout=60)
    assert (client.returncode, stdout, stderr) == (1, b"", b"Aborted!\n")
    # The evaluators run in sessions of their own (on Dask, started by the workers).
    assert_all_end(lambda: group_members(client.pid) + running_commands(command))


CTRL_C_AS_WORKERS_START = """
import multiprocessing.context, os, signal, time
from evalproto.sources.pool import EvaluatorPool
from evalproto.sources.specs import MetricSpec

start_worker = multiprocessing.context.SpawnProcess.start

def ctrl_c_as_workers_start(self):
    os.killpg(0, signal.SIGINT)  # before the worker exists
    start_worker(self)
    os.killpg(0, signal.SIGINT)  # while it starts up

multiprocessing.context.SpawnProcess.start = ctrl_c_as_workers_start
# as in a terminal: a test run in the background may have inherited Ctrl-C ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    with EvaluatorPool(MetricSpec("in-process", "ter"), 2, None):
        # Another thread (numpy's OpenBLAS) may have taken the signal, and the main
        # thread acts on it at its next step, here at the latest.
        time.sleep(30)
    print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_while_workers_start_is_acted_on_once_they_have():
    """The moment the signal tests above hit only by chance: a Ctrl-C to the job while
    a -j pool starts is neither lost (the run would go on) nor taken by a worker that
    has not started yet (a traceback, and a parent waiting for it)."""
    job = subprocess.Popen([sys.executable, "-c", CTRL_C_AS_WORKERS_START],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True)
    stdout, stderr = job.communicate(timeout=60)
    assert (job.returncode, stdout, stderr) == (0, b"interrupted\n", b"")
    assert_all_end(lambda: group_members(job.pid))


CTRL_C_IN_A_WEAKREF_CALLBACK = """
import signal, time, weakref
from evalproto.cli.launch import Interrupted, catch_signals

class Thing:
    pass

catch_signals()
thing = Thing()
# The handler runs, and raises, inside the callback, where Python drops what is raised:
# as when the signal comes while an import releases its module lock.
ref = weakref.ref(thing, lambda ref: signal.raise_signal(signal.SIGINT))
try:
    del thing
    time.sleep(30)
    print("went on")
except Interrupted:
    print("interrupted")
"""


def test_ctrl_c_dropped_where_python_cannot_raise_is_raised_again():
    """CI once caught the job's Ctrl-C arriving as an import released its lock: the
    interrupt was dropped with an "Exception ignored" trace and the run waited on."""
    job = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_WEAKREF_CALLBACK],
                         capture_output=True, timeout=60)
    assert (job.returncode, job.stdout, job.stderr) == (0, b"interrupted\n", b"")


def assert_all_end(running: Callable[[], List[int]], seconds: float = 20.0) -> None:
    """Wait until `running()` lists no process."""
    deadline = time.monotonic() + seconds
    while left := running():
        assert time.monotonic() < deadline, f"processes {left} are still running"
        time.sleep(0.1)


def group_members(group: int) -> List[int]:
    """The running processes of a process group."""
    listed = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True)
    return [int(pid) for pid in listed.stdout.split() if process_state(int(pid)) == "running"]


def running_commands(command: str) -> List[int]:
    """The running processes whose command line is `command`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except (OSError, ValueError):  # not a process, or one that has just ended
            continue
        if entry.name.isdigit() and b" ".join(argv) == command.encode() \
                and process_state(int(entry.name)) == "running":
            found.append(int(entry.name))
    return found


def test_a_closed_stdout_is_not_a_traceback():
    client = subprocess.Popen(
        [sys.executable, "-m", "evalproto", "corpus-score", *DE_EN_REFS, DE_EN_HYP, "-f", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    client.stdout.close()  # like `| head -0`
    stderr = client.stderr.read()
    assert client.wait(timeout=60) == 0  # a reader that stopped reading is no error
    assert stderr == b""


def test_output_file_is_written_whole_and_replaced_only_when_complete(tmp_path):
    output = tmp_path / "scores.jsonl"
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-f", "json", "-o", str(output))
    assert result.exit_code == 0 and result.output == ""
    (row,) = json_rows(output.read_text())
    assert row["n"] == 150
    assert oct(output.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    failed = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-o", str(output),
                     "-e", "no-such-evaluator-anywhere")
    assert failed.exit_code == 1
    assert json_rows(output.read_text()) == [row], "a failed run must not touch the old file"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scores.jsonl"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_unwritable_output_is_named(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "scores.txt"
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-o", str(target))
    assert result.exit_code == 1
    assert f"{target}: cannot write" in result.output


def _sacrebleu(ref_lines, hyp_lines):
    return SacreBLEU().corpus_score(hyp_lines, [ref_lines]).score


def test_a_byte_order_mark_is_kept_as_sacrebleu_keeps_it(tmp_path):
    hyp = tmp_path / "bom.txt"
    hyp.write_bytes(b"\xef\xbb\xbf" + Path(DE_EN_HYP).read_bytes())
    result = run_cli("corpus-score", DE_EN_REFS[0], str(hyp), "-f", "json")
    with open(hyp, encoding="utf-8", newline="\n") as stream:
        expected = _sacrebleu(read_lines(DE_EN_REFS[0]), [line.rstrip() for line in stream])
    assert json_rows(result.output)[0]["score"] == pytest.approx(expected, abs=1e-9)


def test_blank_lines_are_empty_segments_as_in_sacrebleu(tmp_path):
    refs = read_lines(DE_EN_REFS[0])[:20]
    hyps = read_lines(DE_EN_HYP)[:20]
    hyps[3] = hyps[10] = ""
    refs[10] = refs[19] = ""
    (tmp_path / "ref").write_text("\n".join(refs) + "\n")
    (tmp_path / "hyp").write_text("\n".join(hyps) + "\n")
    result = run_cli("corpus-score", str(tmp_path / "ref"), str(tmp_path / "hyp"), "-f", "json")
    (row,) = json_rows(result.output)
    assert row["n"] == 20
    assert row["score"] == pytest.approx(_sacrebleu(refs, hyps), abs=1e-9)


def test_o_follows_a_symbolic_link_and_keeps_it(tmp_path):
    target = tmp_path / "scores.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-o", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and target.read_text().startswith("System")


def test_o_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    output = tmp_path / "scores.txt"
    output.write_text("old\n")
    output.chmod(0o640)
    assert run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-o", str(output)).exit_code == 0
    assert output.stat().st_mode & 0o777 == 0o640 and output.read_text().startswith("System")


def test_o_writes_through_a_fifo_instead_of_replacing_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-o", str(fifo), "-f", "json")
    assert result.exit_code == 0, result.output
    received = reader.communicate(timeout=30)[0].decode()
    assert json_rows(received)[0]["n"] == 150
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_o_writes_through_a_device_instead_of_replacing_it(tmp_path):
    """As root, `-o /dev/stdout` used to replace the device node with a regular file."""
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:  # not root: a link to /dev/null, which is followed
        device.symlink_to("/dev/null")
    result = run_cli("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-o", str(device))
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(device).st_mode)


def _copy(path: str, directory: Path, name: str) -> str:
    target = directory / name
    target.write_bytes(Path(path).read_bytes())
    return str(target)


@pytest.mark.parametrize("args, victim", [
    (["corpus-score", "REF", "HYP", "-o", "HYP"], "HYP"),
    (["corpus-score", "REF", "HYP", "-o", "REF"], "REF"),
    (["corpus-score", "REF", "-i", "x=HYP", "-o", "HYP"], "HYP"),
    (["corpus-score", "REF", "HYP", "--groups", "GROUPS", "-o", "GROUPS"], "GROUPS"),
    (["stats", "REF", "HYP", "-o", "HYP"], "HYP"),
    (["stats", "REF", "HYP", "-o", "LINK"], "HYP"),
    (["reduce", "STATS", "-o", "STATS"], "STATS"),
    (["report", "REF", "-i", "HYP", "-o", "HYP"], "HYP"),
    (["report", "REF", "-i", "HYP", "-o", "out.html", "--latex", "REF"], "REF"),
    (["import-scores", "GROUPS", "--metric", "m", "--system", "s", "-o", "GROUPS"], "GROUPS"),
    (["lm-score", "REF", "-o", "REF"], "REF"),
])
def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path, args, victim):
    """Each of these exited 0, the input gone. The same file is found by device and
    inode, whatever the path (a symbolic link here)."""
    files = {"REF": _copy(DE_EN_REFS[0], tmp_path, "ref"),
             "HYP": _copy(DE_EN_HYP, tmp_path, "hyp"), "GROUPS": str(tmp_path / "groups"),
             "STATS": str(tmp_path / "a.stats"), "LINK": str(tmp_path / "link")}
    Path(files["GROUPS"]).write_text("".join(f"{i % 2}\n" for i in range(150)))
    assert run_cli("stats", files["REF"], files["HYP"], "-o", files["STATS"]).exit_code == 0
    os.symlink(files["HYP"], files["LINK"])
    before = Path(files[victim]).read_bytes()
    result = run_cli(*[files.get(arg, arg.replace("=HYP", f"={files['HYP']}")) for arg in args])
    assert result.exit_code == 2, result.output
    assert "the output is one of the command's inputs" in result.output
    assert "writing the results there would destroy it" in result.output
    assert Path(files[victim]).read_bytes() == before


def test_two_outputs_to_one_file_are_refused(tmp_path):
    page = str(tmp_path / "out.html")
    result = run_cli("report", DE_EN_REFS[0], "-i", DE_EN_HYP, "-o", page, "--json", page)
    assert result.exit_code == 2 and "given as two outputs" in result.output
    assert not os.path.exists(page)


@pytest.mark.slow
def test_o_dev_stdout_writes_where_the_shell_stands(tmp_path):
    """Into a file, /dev/stdout replaced the whole file (what the shell wrote before and
    after was lost); into a pipe it failed; so did a process substitution (/dev/fd/63).
    Each is written through the descriptor the shell gave."""
    out = tmp_path / "out.txt"
    evalproto = [sys.executable, "-m", "evalproto"]
    script = (f'echo before; {" ".join(evalproto)} corpus-score {DE_EN_REFS[0]} {DE_EN_HYP} '
              f'-b -o /dev/stdout; echo after')
    subprocess.run(["bash", "-c", script], stdout=open(out, "w"), check=True, timeout=120)
    assert out.read_text().split("\n") == ["before", "26.5", "after", ""]
    piped = subprocess.run(["bash", "-c", f"{' '.join(evalproto)} corpus-score {DE_EN_REFS[0]} "
                            f"{DE_EN_HYP} -b -o /dev/stdout | cat"], capture_output=True,
                           text=True, timeout=120)
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, "26.5\n", "")
    gz = tmp_path / "out.gz"
    substituted = subprocess.run(
        ["bash", "-c", f"{' '.join(evalproto)} corpus-score {DE_EN_REFS[0]} {DE_EN_HYP} -b "
                       f"-o >(gzip > {gz}); wait $!"], capture_output=True, text=True,
        timeout=120)
    assert substituted.returncode == 0, substituted.stderr
    deadline = time.monotonic() + 30
    while not (gz.exists() and gz.stat().st_size and _gunzips(gz)):
        assert time.monotonic() < deadline, "gzip never finished"
        time.sleep(0.05)
    assert gzip.decompress(gz.read_bytes()) == b"26.5\n"
    errors = subprocess.run(["bash", "-c", f"{' '.join(evalproto)} corpus-score "
                             f"{DE_EN_REFS[0]} {DE_EN_HYP} -b -o /dev/stderr 2>&1 >/dev/null"],
                            capture_output=True, text=True, timeout=120)
    assert errors.stdout == "26.5\n"


def _gunzips(path: Path) -> bool:
    try:
        gzip.decompress(path.read_bytes())
    except (EOFError, OSError):
        return False
    return True


@pytest.mark.slow
def test_a_run_killed_while_writing_leaves_no_temporary_file(tmp_path):
    writer = ("import sys; from evalproto.base.outputs import write_output; "
              "write_output(sys.argv[1], 'x' * 300_000_000)")
    for delay in (0.3, 0.6, 0.9, 1.2):
        (tmp_path / "out.txt").write_text("old\n")
        process = subprocess.Popen([sys.executable, "-c", writer, str(tmp_path / "out.txt")])
        time.sleep(delay)
        process.kill()
        process.wait()
        assert sorted(path.name for path in tmp_path.iterdir()) == ["out.txt"]
        assert (tmp_path / "out.txt").read_text() in ("old\n", "x" * 300_000_000)
