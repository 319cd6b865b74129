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
from evalproto.base.errors import EvaluatorError, EvaluatorWarning, SetupError, warn
from evalproto.base.items import Item, checked_items
from evalproto.base.numerals import shorten
from evalproto.sources.handshake import INFO_WAIT, Action, Event, State, classify, reason, step
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
_STDERR_TAIL_BYTES = 2000
_EXIT_GRACE_SECONDS = 5.0

Reply = Union[bytes, LineTooLong]


class _StartAgain(Exception):
    """The hand-shake says: start the evaluator again without INFO, and resend."""


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

    The first request is `INFO`; the hand-shake (evalproto.sources.handshake) settles
    from its reply how the evaluator is used. Its reply is awaited when first needed,
    until at most INFO_WAIT seconds after INFO was sent (so copies of a -j pool started
    together share one wait). An evaluator that does not describe itself still works
    (its stats are stat1..., its signature its command line), with a warning.

    Replies are checked to be in step with the requests before any result is returned:
    a described evaluator gets INFO after each batch of requests, whose JSON reply must
    come exactly where it belongs (a reply written twice, or one left out, shows there);
    for one without INFO, no line may be waiting beyond the replies.
    """

    strips_whitespace = True
    """The protocol strips the whitespace around every field: what is sent is each text
    stripped (corpus_rows says when that changed a segment)."""

    def __init__(self, command: str | Sequence[str], timeout: Optional[float] = DEFAULT_TIMEOUT,
                 probe_info: bool = True, copy: bool = False) -> None:
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
        self.copy = copy  # one of several (-j): its kernels on one thread (processes.spawn)
        self.timeout = checked_timeout(timeout)
        self.info: Optional[Dict[str, Any]] = None
        self._stat_names: Optional[Tuple[str, ...]] = None
        self._lock = threading.Lock()  # starting and stopping, from any thread
        self._sending = threading.Lock()  # handing request lines to writer threads
        self._state = State.ASKED if probe_info else State.UNDESCRIBED
        self._start()
        if probe_info:
            self._send(["INFO\n"], checked=False)
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
        """Take the reply to INFO if it is still awaited; nothing else is pending then."""
        if self._state is not State.ASKED:
            return
        wait = INFO_WAIT if self.timeout is None else min(self.timeout, INFO_WAIT)
        try:
            line = self._next_line(max(0.0, self._info_asked_at + wait - time.monotonic()))
        except queue.Empty:
            self._move_to(State.LATE)
            return
        if isinstance(line, LineTooLong):
            self._fail(f"its reply to INFO is longer than {MAX_LINE_BYTES >> 20} MiB")
        try:
            self._hand_shake(line)
        except _StartAgain:
            pass  # nothing but INFO was sent

    def _hand_shake(self, line: Optional[bytes]) -> bool:
        """Take the first line after INFO (None: the output ended) as the hand-shake
        says; True if it is the reply to the first request. Raises _StartAgain once the
        evaluator has been started again without INFO."""
        text = _decode(line).strip() if line is not None else ""
        event = classify(text if line is not None else None)
        state, action = step(self._state, event)
        if action in (Action.DESCRIBE, Action.REFUSE):  # a refused one fails here
            self.info = self._checked_info(text)
            self._stat_names = tuple(self.info["stats"])
            self._move_to(state)
            return False
        why = reason(self._state, event, shorten(text, 100))
        if action is Action.RESTART:
            self._start(again=True)
        self._move_to(state)
        self._warn_undescribed(why)
        if action is Action.RESTART:
            raise _StartAgain()
        return True

    def _move_to(self, state: State) -> None:
        """The hand-shake's next state, unless the evaluator was stopped meanwhile (by
        another thread: a -j pool ending its copies), which is then said."""
        with self._lock:
            if self._state is State.STOPPED:
                raise EvaluatorError(f"evaluator {self.command!r} was stopped")
            self._state = state

    def _usable(self) -> None:
        """Settle the hand-shake if it is not yet; a stopped evaluator is not used again."""
        if self._state is State.STOPPED:
            raise EvaluatorError(f"evaluator {self.command!r} was stopped after an earlier "
                                 f"failure or interruption: load it again")
        self._described()

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

    def _warn_undescribed(self, reason: str) -> None:
        warn(EvaluatorWarning(
            f"evaluator {self.command!r} did not describe itself ({reason}): its "
            f"statistics are named stat1, stat2, ... and its signature is its command line"))

    # -- the Evaluator interface --------------------------------------------------

    def stats_many(self, items: Iterable[Item]) -> np.ndarray:
        """One row per item; requests are pipelined, replies checked in order."""
        return self.stats_later(items)()

    def stats_later(self, items: Iterable[Item]) -> Callable[[], np.ndarray]:
        """stats_many in two steps, so that the caller makes its next items while the
        evaluator works: the requests are sent now, and the function returned waits
        for their rows. Call such functions in the order they were returned. Until
        the hand-shake is settled, the rows are awaited here."""
        lines = format_score_requests([
            Item(tuple([ref.strip() for ref in refs]), hyp.strip())
            for refs, hyp in checked_items(items)])
        self._usable()
        if self._state is State.LATE:
            rows = self._rows(*self._pipelined(lines, "SCORE"), "SCORE")
            return lambda: rows
        first_request, writer, checked = self._send(lines)

        def rows_when_replied() -> np.ndarray:
            replies = self._replies_to(first_request, len(lines), "SCORE", checked)
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
        if self._state is State.STOPPED:
            return
        if self._state is State.ASKED and self._requested == 1:  # asked for INFO alone
            self._settle_unused()
            if self._state is State.STOPPED:
                return
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
            self._fail(f"it printed a line no request asked for: {_shown(extra)}")
        if status != 0:
            self._fail("it exited with a non-zero status at the end of its input")
        self._release_pipes()
        self._state = State.STOPPED

    def _settle_unused(self) -> None:
        """Close an evaluator that was asked for INFO and nothing else. A description is
        taken (the evaluator then closes as any); a refusal or an exit (it does not
        know INFO) or silence ends it here: it is not started again without INFO only
        to be closed, nor blamed for the exit that INFO caused, nor warned about."""
        wait = INFO_WAIT if self.timeout is None else min(self.timeout, INFO_WAIT)
        try:
            line = self._next_line(max(0.0, self._info_asked_at + wait - time.monotonic()))
        except queue.Empty:
            line = None
        else:
            if line is not None and not isinstance(line, LineTooLong) and \
                    classify(_decode(line)) is Event.DESCRIPTION:
                self._hand_shake(line)
                return
        self._close_stdin()
        processes.exit_status(self._process, _EXIT_GRACE_SECONDS)
        self.terminate()

    def terminate(self) -> None:
        """Stop the evaluator and anything it started, and reap it (on errors and
        Ctrl-C); once stopped, it is never started again."""
        with self._lock:
            self._state = State.STOPPED
            self._end_process()

    def _end_process(self) -> None:
        """Kill the group and reap the process. Its output pipes' threads end, and close
        them, by themselves (each reads only its pipes): nothing waits for them, so that
        Ctrl-C ends a run of many copies at once, whatever children left their group."""
        processes.kill_group(self._process)
        self._process.wait()
        self._close_stdin()

    def _release_pipes(self) -> None:
        """At a clean close, wait (a bounded while: a child that left the group may hold
        them open) for the ended process's output pipes to be read to the end."""
        for thread in (self._reader, self._drainer):
            thread.join(timeout=_EXIT_GRACE_SECONDS)

    # -- the process and its three pipes ------------------------------------------

    def _start(self, again: bool = False) -> None:
        """Start the evaluator (`again`: in place of the one running), unless it was
        stopped: a thread still at work after a stop must not start one."""
        with self._lock:
            if self._state is State.STOPPED:
                raise EvaluatorError(f"evaluator {self.command!r} was stopped")
            if again:
                self._end_process()
            try:
                self._process = (processes.take(self.argv, self.copy)
                                 or processes.spawn(self.argv, self.copy))
            except OSError as exc:
                problem = ("command not found" if isinstance(exc, FileNotFoundError)
                           else exc.strerror)
                raise EvaluatorError(f"cannot start evaluator {self.command!r}: {problem}: "
                                     f"{self.argv[0]!r}") from None
        self._requested = 0  # request lines handed to a writer thread
        self._writer: Optional[threading.Thread] = None
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
        the first request). When the first replies settle the hand-shake by starting
        the evaluator again, the lines are sent again."""
        self._usable()
        while True:
            first_request, writer, checked = self._send(lines)
            try:
                replies = self._replies_to(first_request, len(lines), kind, checked)
            except _StartAgain:
                continue
            writer.join()
            return replies, first_request

    def _send(self, lines: Sequence[str], checked: Optional[bool] = None
              ) -> Tuple[int, threading.Thread, bool]:
        """Have request lines written by a thread of their own, once the lines handed
        over before them are written; a described evaluator also gets INFO after them
        (`checked`). (The number of the first request, the thread, `checked`.)"""
        if checked is None:
            checked = self._state is State.DESCRIBED
        if checked:
            lines = [*lines, "INFO\n"]
        with self._sending:  # the next writer joins this one: started before it is seen
            first_request = self._requested + 1
            self._requested += len(lines)
            writer = threading.Thread(target=self._write, args=(lines, self._writer),
                                      daemon=True)
            writer.start()
            self._writer = writer
        return first_request, writer, checked

    def _write(self, lines: Sequence[str], after: Optional[threading.Thread]) -> None:
        """Send request lines once `after` has sent its own; a dead evaluator is
        reported by the reply reader."""
        if after is not None:
            after.join()
        stdin = self._process.stdin
        try:
            assert stdin is not None  # spawned with its pipes
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

    def _arrived(self) -> Optional[Reply]:
        """A line that has already arrived beyond those taken, without waiting."""
        while not self._received and not self._ended:
            try:
                batch = self._replies.get_nowait()
            except queue.Empty:
                return None
            if batch is None:
                self._ended = True
            else:
                self._received.extend(batch)
        return self._received[0] if self._received else None

    def _drain_stderr(self, stderr: BinaryIO) -> None:
        while chunk := stderr.read1(65536):  # type: ignore[attr-defined]
            if stderr is self._process.stderr:  # not a replaced copy's
                self._stderr_tail = (self._stderr_tail + chunk)[-_STDERR_TAIL_BYTES:]
        stderr.close()

    def _close_stdin(self) -> None:
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
        except OSError:
            pass

    # -- replies ------------------------------------------------------------------

    def _replies_to(self, first_request: int, count: int, kind: str, checked: bool
                    ) -> List[str]:
        """The reply lines to `count` requests from `first_request` on, checked to be in
        step (see the class docstring). They are decoded a batch at a time; only a batch
        that holds an ERROR is gone through line by line, to name its request. An
        evaluator that exits part-way has the replies it gave checked first, so that a
        bad one is named rather than the missing ones."""
        wanted = count + checked  # and the reply to the INFO after them
        replies: List[str] = []
        while len(replies) < wanted:
            number = first_request + len(replies)
            try:
                lines = self._take_lines(wanted - len(replies), self.timeout)
            except queue.Empty:
                self._fail(f"no reply to {_request(number, kind, len(replies), count)} within "
                           f"{self.timeout:g} s", item=_item(len(replies), count))
            if self._state is State.LATE:
                lines = self._first_replies(lines)
                if not lines:
                    continue  # the late description, and nothing else yet
            if not lines:
                self._rows(replies[:count], first_request, kind)
                self._fail(f"it exited before replying to "
                           f"{_request(number, kind, len(replies), count)}", exiting=True,
                           item=_item(len(replies), count))
            for offset, line in enumerate(lines):
                if isinstance(line, LineTooLong):
                    at = len(replies) + offset
                    self._fail(f"its reply to {_request(number + offset, kind, at, count)} is "
                               f"longer than {MAX_LINE_BYTES >> 20} MiB", item=_item(at, count))
            text = _decode(b"\n".join(line for line in lines if isinstance(line, bytes)))
            if "ERROR" in text:
                for offset, reply in enumerate(map(str.strip, text.split("\n"))):
                    if reply.startswith("ERROR"):
                        at = len(replies) + offset
                        self._fail(f"{_request(number + offset, kind, at, count)} was answered "
                                   f"{shorten(reply, 300)}", item=_item(at, count))
            if checked and "{" in text:
                self._check_none_early(text.split("\n"), len(replies), first_request, count,
                                       kind)
            replies += text.split("\n")
        if checked:
            self._check_in_step(replies, first_request, count)
        elif first_request + count - 1 == self._requested:  # nothing more is awaited
            extra = self._arrived()
            if extra is not None:
                self._fail(f"it printed a line no request asked for: {_shown(extra)}")
        return replies[:count]

    def _first_replies(self, lines: List[Reply]) -> List[Reply]:
        """The first lines after an unanswered INFO, as the hand-shake takes them: a
        late description is left out, a reply kept (an end of the output, or an ERROR,
        starts the evaluator again: _StartAgain)."""
        first = lines[0] if lines else None
        keep = self._hand_shake(b"" if isinstance(first, LineTooLong) else first)
        return lines if keep else lines[1:]

    def _check_none_early(self, lines: List[str], first: int, first_request: int,
                          count: int, kind: str) -> None:
        """The reply to the INFO sent after `count` requests, come before their replies
        are all in: a request was left unanswered (the wait for its reply would never
        end)."""
        for at, line in enumerate(lines, first):
            if at < count and line.lstrip().startswith("{"):
                self._fail(f"its replies are out of step with the requests: the reply to "
                           f"INFO (request {first_request + count}) came where the reply to "
                           f"request {first_request + at} ({kind}) belongs: it left a "
                           f"request unanswered", item=at)

    def _check_in_step(self, replies: List[str], first_request: int, count: int) -> None:
        """In the place of the reply to the INFO sent after `count` requests, a line came
        that no request asked for (or a reply written twice)."""
        if not replies[count].lstrip().startswith("{"):
            self._fail(f"its replies are out of step with the requests: where the reply to "
                       f"INFO (request {first_request + count}) belongs came "
                       f"{shorten(replies[count].strip())}: it wrote a line that no request "
                       f"asked for (or one reply twice)")

    def _rows(self, replies: List[str], first_request: int, kind: str) -> np.ndarray:
        """The numbers of SCORE replies (a row of stats each) or EVAL replies (one
        each), checked in bulk, or reply by reply to name the first bad one."""
        if kind == "SCORE" and self._stat_names is None and replies:
            self._numbers(replies[0], first_request, 0)  # the first reply fixes the width
        width = len(self._stat_names or ()) if kind == "SCORE" else 1
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
        if self._stat_names is None:
            if not values:
                self._fail(f"the reply to request {number} (SCORE) is empty", item=item)
            self._stat_names = tuple(f"stat{i}" for i in range(1, len(values) + 1))
        if len(values) != len(self._stat_names):
            self._fail(f"the reply to request {number} (SCORE) has {len(values)} numbers, "
                       f"expected {len(self._stat_names)}: {shorten(text)}", item=item)
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


def _request(number: int, kind: str, at: int, count: int) -> str:
    """"request N (KIND)" for the reply at `at` among a call's, whose last (at `count`)
    may be the INFO that checks them."""
    return f"request {number} ({kind if at < count else 'INFO'})"


def _item(at: int, count: int) -> Optional[int]:
    """The index of the call's item whose reply is at `at` (None: the checking INFO)."""
    return at if at < count else None


def _shown(line: Reply) -> str:
    return shorten(_decode(line)) if isinstance(line, bytes) else "a huge line"


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
    stdout.close()
    replies.put(None)


def _parse_or_none(text: str) -> Optional[Tuple[float, ...]]:
    """The finite numbers in a reply, or None if it is anything else."""
    try:
        return parse_numbers(text)
    except RequestError:
        return None


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
