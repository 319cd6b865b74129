"""Driving any program that speaks the SCORE/EVAL protocol, as if it were an Evaluator.

Requests are written by a writer thread so that throughput is not bounded by round
trips; replies are read by a reader thread into a queue so each one can be waited
for with a timeout; stderr is drained all the time, because an undrained stderr pipe
deadlocks the child, and its tail is kept for error messages. Every reply is checked,
and every fault (an ERROR reply, garbage, death, silence, output nobody asked for)
becomes one EvaluatorError that names the command, the request, the exit status and
the stderr tail.
"""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import threading
import time
import warnings
from collections import deque
from typing import (
    Any,
    BinaryIO,
    Callable,
    Deque,
    Dict,
    Iterable,
    List,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import numpy as np

from evalproto.base import processes
from evalproto.base.errors import EvaluatorError, EvaluatorWarning, SetupError
from evalproto.base.items import Item, checked_items
from evalproto.base.numerals import shorten
from evalproto.wire.protocol import (
    MAX_LINE_BYTES,
    LineTooLong,
    RequestError,
    arrived_lines,
    format_eval_request,
    format_score_requests,
    parse_numbers,
    parse_rows,
)

DEFAULT_TIMEOUT = 120.0
"""Seconds an evaluator command may take over one reply before it is given up on."""
INFO_WAIT = 10.0
"""The longest wait for the reply to INFO before scoring goes on without it."""
_STDERR_TAIL_BYTES = 2000
_EXIT_GRACE_SECONDS = 5.0
_ASKED, _LATE, _DESCRIBED, _UNDESCRIBED = "asked", "late", "described", "undescribed"

Reply = Union[bytes, LineTooLong]


class _ExitedOnInfo(Exception):
    """The evaluator exited before its first reply after refusing INFO."""


class ClosedOnExit:
    """As a context: `close()` (which checks a clean end) after success, `terminate()`
    after an error or Ctrl-C, so a failure never waits on, or leaves behind, a child."""

    def close(self) -> None:
        raise NotImplementedError

    def terminate(self) -> None:
        raise NotImplementedError

    def __enter__(self: Closing) -> Closing:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()


Closing = TypeVar("Closing", bound=ClosedOnExit)


class EvaluatorProcess(ClosedOnExit):
    """An external evaluator command, with the interface of an in-process Evaluator.

    The first request is `INFO`. Its reply is awaited when first needed, until at most
    INFO_WAIT seconds after INFO was sent (so copies of a -j pool started together
    share one wait, whichever is asked first):
    - a JSON object describes the evaluator: its stat names, direction and signature;
    - an ERROR line, or an exit, means it does not know INFO. One that exited, at once
      or when the SCOREs arrive (the protocol's fail-fast), is started again without it;
    - no reply in time means a slow start or an evaluator that ignores INFO: its first
      reply line then tells which (a late JSON object is taken as the description).
    An evaluator that does not describe itself still works (its stats are stat1...,
    its signature its command line), with a warning saying so.
    """

    def __init__(self, command: str | Sequence[str], timeout: Optional[float] = DEFAULT_TIMEOUT,
                 probe_info: bool = True) -> None:
        if isinstance(command, str):
            try:
                self.argv = shlex.split(command)
            except ValueError as exc:
                raise SetupError(f"cannot parse the evaluator command {command!r}: {exc}"
                                 ) from None
        else:
            self.argv = list(command)
        if not self.argv:
            raise SetupError("an evaluator command cannot be empty")
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.timeout = checked_timeout(timeout)
        self.info: Optional[Dict[str, Any]] = None
        self._stat_names: Optional[Tuple[str, ...]] = None
        self._start()
        self._info = _ASKED if probe_info else _UNDESCRIBED
        if probe_info:
            self._send(["INFO\n"])
        self._info_asked_at = time.monotonic()

    # -- what the evaluator says of itself ----------------------------------------

    @property
    def stat_names(self) -> Optional[Tuple[str, ...]]:
        """The stat names INFO declared; None if the evaluator does not answer INFO."""
        self._described()
        return self._stat_names

    @property
    def name(self) -> str:
        """The name INFO declared, or the command."""
        self._described()
        return self.info["name"] if self.info else self.command

    @property
    def score_name(self) -> Optional[str]:
        """The score's name, if INFO gives it (`score_name`, an extension: "BLEU")."""
        self._described()
        return self.info.get("score_name") if self.info else None

    @property
    def extra_decimals(self) -> int:
        """Decimals beyond a percentage's, if INFO gives them (see Evaluator)."""
        self._described()
        return self.info.get("extra_decimals", 0) if self.info else 0

    @property
    def higher_is_better(self) -> bool:
        """The direction INFO declared (higher, when it declares none)."""
        self._described()
        return bool(self.info["higher_is_better"]) if self.info else True

    def signature(self) -> str:
        """The signature INFO declared, or `command:COMMAND`."""
        self._described()
        return self.info["signature"] if self.info else f"command:{self.command}"

    def _described(self) -> None:
        """Take the reply to INFO, if it is still awaited (see the class docstring)."""
        if self._info != _ASKED:
            return
        wait = INFO_WAIT if self.timeout is None else min(self.timeout, INFO_WAIT)
        try:
            line = self._next_line(max(0.0, self._info_asked_at + wait - time.monotonic()))
        except queue.Empty:
            self._info = _LATE
            return
        if line is None:  # it exited on INFO: start afresh without it
            self._restart_without_info("it exited when asked for INFO")
        elif isinstance(line, LineTooLong):
            self._fail(f"its reply to INFO is longer than {MAX_LINE_BYTES >> 20} MiB")
        else:
            self._take_info(_decode(line))

    def _take_info(self, text: str) -> None:
        """The reply to INFO: a description, or a refusal (an ERROR line)."""
        text = text.strip()
        if text.startswith("ERROR"):
            self._info, self._may_restart = _UNDESCRIBED, True
            self._warn_undescribed(f"it answered INFO with {shorten(text, 100)}")
            return
        self.info = self._checked_info(text)
        self._stat_names = tuple(self.info["stats"])
        self._info = _DESCRIBED

    def _checked_info(self, text: str) -> Dict[str, Any]:
        try:
            info = json.loads(text)
        except (ValueError, RecursionError):
            info = None
        problem = _info_problem(info)
        if problem:
            self._fail(f"its reply to INFO, {shorten(text, 200)}, is not a description: "
                       f"{problem}; expected a JSON object with 'name', 'stats', "
                       f"'higher_is_better' and 'signature', or an ERROR line")
        return info

    def _restart_without_info(self, reason: str) -> None:
        self.terminate()
        self._start()
        self._info, self._may_restart = _UNDESCRIBED, False
        self._warn_undescribed(reason)

    def _warn_undescribed(self, reason: str) -> None:
        warnings.warn(EvaluatorWarning(
            f"evaluator {self.command!r} did not describe itself ({reason}): its "
            f"statistics are named stat1, stat2, ... and its signature is its command line"))

    # -- the Evaluator interface --------------------------------------------------

    strips_whitespace = True
    """The protocol strips the whitespace around every field: what is sent is each text
    stripped (corpus_rows says when that changed a segment)."""

    def stats_many(self, items: Iterable[Item]) -> np.ndarray:
        """One row per item; requests are pipelined, replies checked in order."""
        return self.stats_later(items)()

    def stats_later(self, items: Iterable[Item]) -> Callable[[], np.ndarray]:
        """stats_many in two steps, so that the caller makes its next items while the
        evaluator works: the requests are sent now, and the function returned waits
        for their rows. Call such functions in the order they were returned. Until
        the evaluator has answered once (it may yet exit on INFO, and be started
        again without it), the rows are awaited here."""
        lines = format_score_requests([
            Item(tuple([ref.strip() for ref in refs]), hyp.strip())
            for refs, hyp in checked_items(items)])
        self._described()
        if self._may_restart or self._info == _LATE:
            rows = self._rows(*self._pipelined(lines, "SCORE"), "SCORE")
            return lambda: rows
        first_request, writer = self._send(lines)

        def rows_when_replied() -> np.ndarray:
            replies = self._replies_to(first_request, len(lines), "SCORE")
            writer.join()
            return self._rows(replies, first_request, "SCORE")

        return rows_when_replied

    def score(self, vector: Sequence[float]) -> float:
        """EVAL one summed vector."""
        return float(self.score_many(np.asarray([vector], dtype=np.float64))[0])

    def score_many(self, vectors: np.ndarray) -> np.ndarray:
        """EVAL each row of a (k, d) array; requests are pipelined like SCOREs."""
        lines = [format_eval_request(vector) for vector in vectors]
        return self._rows(*self._pipelined(lines, "EVAL"), "EVAL")[:, 0]

    def for_sentences(self) -> EvaluatorProcess:
        """Segments are scored by EVAL like any vector: the command decides how."""
        return self

    def close(self) -> None:
        """End input and check that the evaluator exits cleanly with nothing left unsaid.
        The wait for its exit is bounded whatever the timeout; once it has exited,
        anything it left running (a background child holding its output open) is
        killed with its group."""
        self._described()
        self._close_stdin()
        status = processes.exit_status(self._process, _EXIT_GRACE_SECONDS)
        if status is None:
            self._fail(f"it did not exit within {_EXIT_GRACE_SECONDS:g} s after the end of "
                       f"its input")
        processes.kill_group(self._process)
        self._process.wait()
        try:
            extra = self._next_line(_EXIT_GRACE_SECONDS)
        except queue.Empty:
            extra = None  # its output is held open by nothing that is still running
        if extra is not None:
            shown = shorten(_decode(extra)) if isinstance(extra, bytes) else "a huge line"
            self._fail(f"it printed a line no request asked for: {shown}")
        if status != 0:
            self._fail("it exited with a non-zero status at the end of its input")

    def terminate(self) -> None:
        """Stop the evaluator and anything it started, and reap it (on errors and Ctrl-C)."""
        processes.kill_group(self._process)
        self._process.wait()
        self._close_stdin()

    # -- the process and its three pipes ------------------------------------------

    def _start(self) -> None:
        try:
            self._process = processes.take(self.argv) or processes.spawn(self.argv)
        except OSError as exc:
            problem = "command not found" if isinstance(exc, FileNotFoundError) else exc.strerror
            raise EvaluatorError(
                f"cannot start evaluator {self.command!r}: {problem}: {self.argv[0]!r}") from None
        self._requested = 0  # request lines handed to a writer thread
        self._writer: Optional[threading.Thread] = None
        self._may_restart = False
        self._replies: queue.Queue[Optional[List[Reply]]] = queue.Queue()
        self._received: Deque[Reply] = deque()
        self._ended = False
        self._stderr_tail = b""
        # Each thread is bound to this process's stream (and queue): after a restart,
        # the first copy's threads can still be finishing, and must not reach the new one.
        self._reader = threading.Thread(target=_read_replies,
                                        args=(self._process.stdout, self._replies), daemon=True)
        self._drainer = threading.Thread(target=self._drain_stderr,
                                         args=(self._process.stderr,), daemon=True)
        self._reader.start()
        self._drainer.start()

    def _pipelined(self, lines: Sequence[str], kind: str) -> Tuple[List[str], int]:
        """Send request lines from a writer thread while collecting the replies in
        order, so throughput is not bounded by round trips; (replies, the number of
        the first request). An evaluator that turned out to have exited on INFO is
        started again without it, and the lines are sent again."""
        self._described()
        while True:
            first_request, writer = self._send(lines)
            try:
                replies = self._replies_to(first_request, len(lines), kind)
            except _ExitedOnInfo:
                writer.join()
                self._restart_without_info("it exited after its reply to INFO")
                continue
            writer.join()
            return replies, first_request

    def _send(self, lines: Sequence[str]) -> Tuple[int, threading.Thread]:
        """Have request lines written by a thread of their own, once the lines handed
        over before them are written; (the number of the first request, the thread)."""
        first_request = self._requested + 1
        self._requested += len(lines)
        self._writer = threading.Thread(target=self._write, args=(lines, self._writer),
                                        daemon=True)
        self._writer.start()
        return first_request, self._writer

    def _write(self, lines: Sequence[str], after: Optional[threading.Thread]) -> None:
        """Send request lines once `after` has sent its own; a dead evaluator is
        reported by the reply reader."""
        if after is not None:
            after.join()
        stdin = self._process.stdin
        try:
            stdin.write("".join(lines).encode("utf-8"))
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def _next_line(self, wait: Optional[float]) -> Optional[Reply]:
        """The next line the evaluator wrote, or None once its output has ended; raises
        queue.Empty after `wait` seconds."""
        lines = self._take_lines(1, wait)
        return lines[0] if lines else None

    def _take_lines(self, most: int, wait: Optional[float]) -> List[Reply]:
        """Up to `most` of the lines the evaluator wrote, waiting only while none is at
        hand; [] once its output has ended; raises queue.Empty after `wait` seconds.
        Lines come from the reader a batch at a time."""
        while not self._received and not self._ended:
            batch = self._replies.get(timeout=wait)
            if batch is None:
                self._ended = True
            else:
                self._received.extend(batch)
        if len(self._received) <= most:
            lines, self._received = list(self._received), deque()
            return lines
        return [self._received.popleft() for _ in range(most)]

    def _drain_stderr(self, stderr: BinaryIO) -> None:
        while chunk := stderr.read1(65536):
            if stderr is self._process.stderr:  # not a replaced copy's
                self._stderr_tail = (self._stderr_tail + chunk)[-_STDERR_TAIL_BYTES:]

    def _close_stdin(self) -> None:
        try:
            self._process.stdin.close()
        except OSError:
            pass

    # -- replies ------------------------------------------------------------------

    def _replies_to(self, first_request: int, count: int, kind: str) -> List[str]:
        """The reply lines to `count` requests from `first_request` on. They are decoded
        a batch at a time; only a batch that holds an ERROR is gone through line by
        line, to name its request."""
        replies: List[str] = []
        while len(replies) < count:
            number = first_request + len(replies)
            try:
                lines = self._take_lines(count - len(replies), self.timeout)
            except queue.Empty:
                self._fail(f"no reply to request {number} ({kind}) within {self.timeout:g} s",
                           item=len(replies))
            if not lines:
                if self._may_restart and not replies:
                    raise _ExitedOnInfo()
                self._fail(f"it exited before replying to request {number} ({kind})",
                           exiting=True, item=len(replies))
            if self._info == _LATE:
                lines = self._late_info(lines)
                if not lines:
                    continue
            self._may_restart = False
            for offset, line in enumerate(lines):
                if isinstance(line, LineTooLong):
                    self._fail(f"its reply to request {number + offset} ({kind}) is longer "
                               f"than {MAX_LINE_BYTES >> 20} MiB", item=len(replies) + offset)
            text = _decode(b"\n".join(lines))
            if "ERROR" in text:
                for offset, line in enumerate(map(str.strip, text.split("\n"))):
                    if line.startswith("ERROR"):
                        self._fail(f"request {number + offset} ({kind}) was answered "
                                   f"{shorten(line, 300)}", item=len(replies) + offset)
            replies += text.split("\n")
        return replies

    def _late_info(self, lines: List[Reply]) -> List[Reply]:
        """The first line after an unanswered INFO: the late reply to INFO (taken, and
        left out of the replies), or already the reply to the next request."""
        self._info = _UNDESCRIBED
        first = lines[0]
        text = _decode(first).strip() if isinstance(first, bytes) else ""
        if text.startswith(("{", "ERROR")):
            self._take_info(text)
            return lines[1:]
        self._warn_undescribed("it did not answer INFO")
        return lines

    def _rows(self, replies: List[str], first_request: int, kind: str) -> np.ndarray:
        """The numbers of SCORE replies (a row of stats each) or EVAL replies (one
        each), checked in bulk, or reply by reply to name the first bad one."""
        if kind == "SCORE" and self.stat_names is None and replies:
            self._numbers(replies[0], first_request, 0)  # the first reply fixes the width
        width = len(self.stat_names or ()) if kind == "SCORE" else 1
        rows = parse_rows(replies, width)
        if rows is None:
            parse = self._numbers if kind == "SCORE" else self._single_number
            rows = np.array([parse(text.strip(), first_request + item, item)
                             for item, text in enumerate(replies)], dtype=np.float64)
        return rows.reshape(len(replies), width)

    def _numbers(self, text: str, number: int, item: int) -> Tuple[float, ...]:
        values = _parse_or_none(text)
        if values is None:
            self._fail(f"the reply to request {number} (SCORE) is not finite numbers: "
                       f"{shorten(text)}", item=item)
        if self.stat_names is None:
            if not values:
                self._fail(f"the reply to request {number} (SCORE) is empty", item=item)
            self._stat_names = tuple(f"stat{i}" for i in range(1, len(values) + 1))
        if len(values) != len(self.stat_names):
            self._fail(f"the reply to request {number} (SCORE) has {len(values)} numbers, "
                       f"expected {len(self.stat_names)}", item=item)
        return values

    def _single_number(self, text: str, number: int, item: int) -> float:
        values = _parse_or_none(text)
        if values is None or len(values) != 1:
            self._fail(f"the reply to request {number} (EVAL) is not one finite number: "
                       f"{shorten(text)}", item=item)
        return values[0]

    def _fail(self, problem: str, exiting: bool = False,
              item: Optional[int] = None) -> NoReturn:
        """Stop the evaluator and raise the failure; `item` is the index, among the
        items (or vectors) of the current call, of the one whose request failed."""
        if exiting:  # its stdout is closed; give it a moment to report its exit status
            try:
                self._process.wait(timeout=_EXIT_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        status = self._process.poll()
        state = ("still running, killed by evalproto" if status is None
                 else f"exit status {status}")
        self.terminate()
        self._drainer.join(timeout=1.0)
        tail = _decode(self._stderr_tail).strip()
        raise EvaluatorError(
            f"evaluator {self.command!r} failed: {problem}; {state}; "
            f"stderr: {tail[-500:] if tail else '(empty)'}", item)


def _info_problem(info: Any) -> Optional[str]:
    """What is wrong with a parsed INFO reply, or None."""
    if not isinstance(info, dict):
        return "it is not a JSON object"
    stats = info.get("stats")
    if not isinstance(stats, list) or not stats or not all(
            isinstance(name, str) and name for name in stats):
        return "'stats' is not a non-empty list of stat names"
    for key, kind, what in (("name", str, "a string"), ("signature", str, "a string"),
                            ("higher_is_better", bool, "true or false")):
        if not isinstance(info.get(key), kind):
            return f"{key!r} is not {what}"
    if not isinstance(info.get("score_name", ""), str):
        return "'score_name' is not a string"
    decimals = info.get("extra_decimals", 0)
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 20:
        return "'extra_decimals' is not a whole number from 0 to 20"
    return None


def checked_timeout(timeout: Optional[float]) -> Optional[float]:
    """A reply timeout: seconds > 0, or None for no bound; else a TypeError/ValueError."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if not timeout > 0:  # NaN too
        raise ValueError(f"timeout must be more than 0 seconds (None: no bound), got "
                         f"{timeout!r}")
    return float(timeout)


def _read_replies(stdout: BinaryIO, replies: queue.Queue) -> None:
    """Hand over one process's output lines as they arrive, and None at its end."""
    for lines in arrived_lines(stdout):
        replies.put(lines)
    replies.put(None)


def _parse_or_none(text: str) -> Optional[Tuple[float, ...]]:
    """The finite numbers in a reply, or None if it is anything else."""
    try:
        return parse_numbers(text)
    except RequestError:
        return None


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
