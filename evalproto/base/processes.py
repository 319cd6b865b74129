"""Starting evaluator processes, and ending them with everything they started.

Every evaluator runs in its own process group (its own session), so that a shell
wrapper's children go with it: on failure or Ctrl-C the whole group is killed, and at
a clean end anything the evaluator left running in the background is killed too, once
the evaluator itself has exited. Where the process that started a group may itself be
killed (a server's worker), a group keeper ends its groups after it (KEEP_GROUPS).
Processes may be started ahead of need (the `evalproto` command starts its -e
evaluators before its own slow imports) and taken later by the code that needs them.
Only the standard library (and evalproto.base.compiled, which imports no more) is
imported here, so that the head start comes before anything slow.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from evalproto.base.compiled import ONE_THREAD

_started: Dict[Tuple[Tuple[str, ...], bool], List[subprocess.Popen]] = {}
_POLL_SECONDS = 0.01

KEEP_GROUPS = "EVALPROTO_KEEP_GROUPS"
"""Set to 1 in a process's environment (keep_groups_after_exit), for it and every
process it starts: each process group that one of them starts is ended once that
process has ended, even by kill -9, by a keeper process of its own
(evalproto.base.groupkeeper, started on its first group)."""
_KEEPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "groupkeeper.py")
_keeping = threading.Lock()
_keeper: Optional[subprocess.Popen] = None
_keeper_of = 0  # the process that started _keeper (a forked child needs its own)
_kept: Set[int] = set()  # the groups started here and not ended yet


def most_copies() -> int:
    """The most copies of an evaluator that -j may run on this machine: 4 a CPU, at least
    8. More would only queue for the CPUs, and a mistyped -j started processes by the
    thousand until memory ran out."""
    return max(8, 4 * (os.cpu_count() or 1))


def spawn(argv: Sequence[str], copy: bool = False,
          env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    """Start an evaluator (or a model) with its three pipes, in its own process group;
    as one of several copies (`copy`, -j), told to run its kernels on one thread
    (ONE_THREAD); with `env` instead of this process's environment."""
    environment = env if env is not None else os.environ
    process = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True,
                               env={**environment, **ONE_THREAD} if copy else env)
    _keep(process.pid, True)
    return process


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def peak_memory(pid: int) -> int:
    """The peak resident memory, in bytes, of one process so far, as Linux keeps it
    (VmHWM); 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/status", "rb") as stream:
            for line in stream:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_memory(pid: int) -> int:
    """The resident memory, in bytes, of a process and all its descendants now (Linux's
    /proc; 0 for what has ended meanwhile)."""
    total, pending, seen = 0, [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(f"/proc/{current}/statm", "rb") as stream:
                total += int(stream.read().split()[1]) * _PAGE
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", "rb") as stream:
                    pending.extend(int(child) for child in stream.read().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def keep_groups_after_exit() -> None:
    """From now on, the process groups that this process and the processes it starts
    start are ended when the process that started them ends, however it ends (see
    KEEP_GROUPS): a server's workers are killed with it, and their evaluators must not
    outlive them."""
    os.environ[KEEP_GROUPS] = "1"


def _keep(group: int, started: bool) -> None:
    """Tell this process's group keeper that `group` was started, or ended here."""
    global _keeper, _keeper_of
    if os.environ.get(KEEP_GROUPS) != "1":
        return
    with _keeping:
        (_kept.add if started else _kept.discard)(group)
        told = f"{'+' if started else '-'}{group}\n"
        if _keeper is None or _keeper_of != os.getpid() or _keeper.poll() is not None:
            _keeper = subprocess.Popen([sys.executable, "-I", _KEEPER],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
            _keeper_of = os.getpid()
            told = "".join(f"+{kept}\n" for kept in sorted(_kept))
        try:
            assert _keeper.stdin is not None
            _keeper.stdin.write(told.encode("ascii"))
            _keeper.stdin.flush()
        except OSError:  # the keeper died: the next group starts another
            pass


def start_ahead(argv: Sequence[str], copy: bool = False) -> None:
    """Start a process now for a later `take` of the same command line, as a copy or not."""
    process = spawn(argv, copy)
    _started.setdefault((tuple(argv), copy), []).append(process)


def take(argv: Sequence[str], copy: bool = False) -> Optional[subprocess.Popen]:
    """A process started ahead for exactly this command line (a copy or not), if one is
    waiting."""
    waiting = _started.get((tuple(argv), copy))
    return waiting.pop() if waiting else None


def kill_group(process: subprocess.Popen) -> None:
    """Kill a process and everything in its group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone
    _keep(process.pid, False)


def exit_status(process: subprocess.Popen, seconds: float) -> Optional[int]:
    """Wait up to `seconds` for the process to exit, without reaping it (so that its
    group can still be killed safely: an unreaped process keeps its id); its exit
    status (negative for a signal), or None if it is still running. Woken by the exit
    itself where Linux gives a process a file descriptor (pidfd), not by polling: a
    model's run would otherwise wait up to a poll's interval after its last reply."""
    deadline = time.monotonic() + seconds
    status = _status_now(process)
    if status is not None or seconds <= 0:
        return status
    waiter = _exit_descriptor(process.pid)
    exits = select.poll()  # not select.select, which refuses descriptors past 1023
    if waiter is not None:
        exits.register(waiter, select.POLLIN)
    try:
        while (status := _status_now(process)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if waiter is None:
                time.sleep(min(_POLL_SECONDS, remaining))
            else:
                exits.poll(remaining * 1000)
        return status
    finally:
        if waiter is not None:
            os.close(waiter)


def _status_now(process: subprocess.Popen) -> Optional[int]:
    """The exit status of a process that has exited (not reaping it), or None."""
    try:
        found = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # already reaped
        return process.returncode
    if found is None:
        return None
    return found.si_status if found.si_code == os.CLD_EXITED else -found.si_status


def _exit_descriptor(pid: int) -> Optional[int]:
    """A descriptor that becomes readable when the process exits (Linux 5.3's
    pidfd_open), or None where there is none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def end(process: subprocess.Popen) -> None:
    """Kill the process's group and reap the process; close its pipes."""
    kill_group(process)
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def end_untaken() -> None:
    """End every process started ahead that nobody took (the run failed, or did not
    need it)."""
    for processes in _started.values():
        for process in processes:
            end(process)
    _started.clear()


@contextmanager
def signals_held_for_workers() -> Iterator[None]:
    """Ctrl-C and SIGTERM held while worker processes start, and acted on once they have.

    A terminal sends Ctrl-C to every process of the job, and only the parent must act on
    it (stopping the workers quietly); acted on while workers start, it would leave a
    worker waiting for start-up data that never comes. So the parent records either
    signal meanwhile, and raises it again at the end. Ctrl-C is also blocked in this
    thread: a worker started from it inherits the block (a setting to ignore it would be
    inherited too, but an ignored signal is lost for the parent as well), so that it
    cannot be interrupted before `ignore_interrupts` runs in it; a Dask worker keeps it
    blocked, which for it is the same. Signals can be set from the main thread only;
    elsewhere the workers keep the defaults.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # started later, it would unblock Ctrl-C here
    held: List[int] = []
    handlers = {number: signal.signal(number, lambda number, frame: held.append(number))
                for number in (signal.SIGINT, signal.SIGTERM)}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one that came is recorded now
        for number, handler in handlers.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        if held:
            signal.raise_signal(held[0])


def ignore_interrupts() -> None:
    """In a worker started under `signals_held_for_workers`: Ctrl-C ignored from now
    on, and no longer blocked (one that came during start-up is dropped)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def die_with_parent(parent: int) -> None:
    """In a worker process started by process `parent`: be killed when it ends, even by
    kill -9 (Linux's PR_SET_PDEATHSIG, for the thread that started this process; on
    other systems nothing), so that no worker outlives a server that crashed."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    set_death_signal = 1  # PR_SET_PDEATHSIG
    ctypes.CDLL(None, use_errno=True).prctl(set_death_signal, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the signal was set
        os._exit(1)
