"""Models as processes, as Dynabench evaluates models: a program that reads one JSON
object a line on standard input (an example's "id" and the task's input keys) and
writes one JSON object a line on standard output, flushed (the "id", the "pred" and the
task's output keys), as the evaluators speak their protocol (docs/models.md).

`run_model` runs one on a dataset's examples and gives its predictions, in the
examples' order, with what the run measured: its examples per second (from the start
of the model's process to its last reply) and the peak resident memory of its process
tree. The model runs in a process group of its own, without the service's tokens in
its environment; it is stopped, group and all, when a reply is late, wrong or missing,
and at the end. A reply that is not a JSON object, names another id, lacks "pred" or
an output key, or a model that exits or goes silent, fails the run with a message that
names the example (and the key).
"""

from __future__ import annotations

import os
import selectors
import shlex
import time
from dataclasses import dataclass
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

import msgspec

from evalproto.base import processes
from evalproto.base.errors import EvalprotoError, SetupError
from evalproto.wire.protocol import MAX_LINE_BYTES, LineTooLong

MEMORY_EVERY = 0.01
"""Seconds between two readings of the model's memory (a peak shorter than this may
be missed; the model's own peak, which the kernel keeps, never is)."""
EXIT_SECONDS = 5.0
"""How long a model has to exit once its input has ended."""
HIDDEN = ("EVALPROTO_TOKEN", "EVALPROTO_ADMIN_TOKEN")
"""Environment variables a model never sees: the tokens of the service that runs it."""
STDERR_TAIL = 2000

Example = Tuple[str, Dict[str, Any]]
"""An example as a model receives it: its id and its input keys' values."""


class ModelError(EvalprotoError):
    """A model's run failed: the message names the example and what was wrong."""


@dataclass(frozen=True)
class ModelRun:
    """What a model's run on a dataset gave: a reply per example, in order (each with
    "id", "pred" and the output keys), and what was measured."""

    replies: List[Dict[str, Any]]
    seconds: float  # from the start of the model's process to its last reply
    peak_memory: int  # bytes, of the model's process tree

    @property
    def throughput(self) -> float:
        """Examples per second."""
        return len(self.replies) / self.seconds if self.seconds > 0 else float("inf")

    @property
    def memory_gib(self) -> float:
        return self.peak_memory / 2**30

    def predictions_jsonl(self) -> bytes:
        """The replies as a predictions file, as a team would submit it."""
        encode = msgspec.json.Encoder().encode
        return b"".join(encode(reply) + b"\n" for reply in self.replies)


def model_argv(command: str) -> List[str]:
    """A model's command line, split as a shell would (no shell runs it)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise SetupError(f"cannot parse the model's command {command!r}: {exc}") from None
    if not argv:
        raise SetupError("a model's command cannot be empty")
    return argv


def run_model(command: str, examples: Sequence[Example], output_keys: Sequence[str] = (),
              timeout: Optional[float] = None) -> ModelRun:
    """Run the model `command` on `examples`: see the module's docstring. `timeout` is
    the longest wait for any one reply, in seconds (None: no limit)."""
    argv = model_argv(command)
    environment = {name: value for name, value in os.environ.items() if name not in HIDDEN}
    encode = msgspec.json.Encoder().encode
    given = b"".join(encode({"id": key, **inputs}) + b"\n" for key, inputs in examples)
    began = time.monotonic()
    try:
        process = processes.spawn(argv, env=environment)
    except OSError as exc:
        problem = "command not found" if isinstance(exc, FileNotFoundError) else exc.strerror
        raise ModelError(f"cannot start the model {command!r}: {problem}") from None
    run = _Running(process, command, given)
    try:
        replies = run.replies(examples, output_keys, timeout)
        seconds = time.monotonic() - began
        run.read_memory()  # once more, while the model still lives
        run.finish()
        return ModelRun(replies, seconds, run.peak)
    finally:
        processes.end(process)


class _Running:
    """A model's process while it runs, in one loop (no thread): its input written as
    its pipe takes it, its replies read and checked as they come, the tail of its
    stderr kept, and its memory read every MEMORY_EVERY seconds."""

    def __init__(self, process: Any, command: str, given: bytes) -> None:
        self.process = process
        self.command = command
        self.pending = memoryview(given)  # the input not written yet
        self.lines: List[Any] = []  # complete lines not taken yet
        self.partial = bytearray()  # the start of a line
        self.ended = False  # the model's output has ended
        self.stderr_tail = b""
        self.peak = 0
        self.selector = selectors.DefaultSelector()
        self.reading_at = time.monotonic()
        for stream, events in ((process.stdin, selectors.EVENT_WRITE),
                               (process.stdout, selectors.EVENT_READ),
                               (process.stderr, selectors.EVENT_READ)):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream.fileno(), events, stream)
        if not given:
            self._close_input()

    def replies(self, examples: Sequence[Example], output_keys: Sequence[str],
                timeout: Optional[float]) -> List[Dict[str, Any]]:
        """Each example's reply, checked, in order."""
        replies = []
        for number, (key, _) in enumerate(examples, 1):
            line = self._next(timeout, f"example {number} (id {key!r})")
            replies.append(self._checked(line, number, key, output_keys))
        return replies

    def _next(self, timeout: Optional[float], where: str) -> Any:
        """The model's next line, or its run's failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.lines:
            if self.ended:
                self._fail(f"{where}: the model's output ended before its reply "
                           f"({self._exit_status()})")
            if deadline is not None and time.monotonic() >= deadline:
                self._fail(f"{where}: no reply within {timeout:g} s (the model's "
                           f"--timeout); the model was stopped")
            self._turn(deadline)
        return self.lines.pop(0)

    def _turn(self, deadline: Optional[float]) -> None:
        """Wait for the pipes (until the next reading of the memory, or `deadline`),
        and move what they allow."""
        now = time.monotonic()
        wait = self.reading_at + MEMORY_EVERY - now
        if deadline is not None:
            wait = min(wait, deadline - now)
        for selected, _ in self.selector.select(max(0.0, wait)):
            stream = selected.data
            if stream is self.process.stdin:
                self._write()
            elif stream is self.process.stdout:
                self._read()
            else:
                self._read_stderr()
        if time.monotonic() >= self.reading_at + MEMORY_EVERY:
            self.read_memory()

    def _write(self) -> None:
        try:
            written = os.write(self.process.stdin.fileno(), self.pending[:1 << 16])
        except BlockingIOError:
            return
        except OSError:  # the model closed its input (it exited): its replies say so
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self._close_input()

    def _close_input(self) -> None:
        """The end of the input: the model exits once it has replied to all."""
        if self.process.stdin.fileno() in self.selector.get_map():
            self.selector.unregister(self.process.stdin.fileno())
        try:
            self.process.stdin.close()
        except OSError:
            pass

    def _read(self) -> None:
        stdout = self.process.stdout
        try:
            chunk = os.read(stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self.selector.unregister(stdout.fileno())
            self.ended = True
            if self.partial:  # a last line without its newline
                self.lines.append(bytes(self.partial))
                self.partial.clear()
            return
        *complete, rest = (bytes(self.partial) + chunk).split(b"\n")
        self.lines.extend(LineTooLong() if len(line) > MAX_LINE_BYTES else line
                          for line in complete)
        self.partial[:] = rest
        if len(self.partial) > MAX_LINE_BYTES:
            self.lines.append(LineTooLong())
            self.partial.clear()

    def _read_stderr(self) -> None:
        stderr = self.process.stderr
        try:
            chunk = os.read(stderr.fileno(), 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self.selector.unregister(stderr.fileno())
        self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]

    def read_memory(self) -> None:
        """The peak so far: the most the process tree held at once at a reading, or the
        most the model's own process ever held, which Linux keeps."""
        pid = self.process.pid
        self.peak = max(self.peak, processes.tree_memory(pid), processes.peak_memory(pid))
        self.reading_at = time.monotonic()

    def _checked(self, line: Any, number: int, key: str,
                 output_keys: Sequence[str]) -> Dict[str, Any]:
        where = f"example {number} (id {key!r})"
        if isinstance(line, LineTooLong):
            self._fail(f"{where}: the reply is longer than {MAX_LINE_BYTES >> 20} MiB")
        try:
            reply = msgspec.json.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            self._fail(f"{where}: the reply is not JSON: {_shown(line)}")
        if not isinstance(reply, dict):
            self._fail(f"{where}: the reply is not a JSON object: {_shown(line)}")
        if "id" not in reply:
            self._fail(f"{where}: the reply has no key 'id'")
        if str(reply["id"]) != key:
            self._fail(f"{where}: the reply names id {reply['id']!r}; replies come in the "
                       f"examples' order, one an example")
        for name in ("pred", *output_keys):
            if name not in reply:
                self._fail(f"{where}: the reply has no key {name!r}")
        if not isinstance(reply["pred"], str):
            self._fail(f"{where}: the reply's 'pred' is {type(reply['pred']).__name__}; "
                       f"expected a string")
        return {"id": key, "pred": reply["pred"], **{name: reply[name] for name in output_keys}}

    def finish(self) -> None:
        """Check that the model, its input ended, exits cleanly, having said nothing
        more."""
        deadline = time.monotonic() + EXIT_SECONDS
        while not self.ended and not self.lines and time.monotonic() < deadline:
            self._turn(deadline)
        if self.lines:
            self._fail(f"the model wrote a line after its last reply: {_shown(self.lines[0])}")
        status = processes.exit_status(self.process, max(0.0, deadline - time.monotonic()))
        if status is None:
            self._fail(f"the model did not exit within {EXIT_SECONDS:g} s of the end of its "
                       f"input")
        if status != 0:
            self._fail(f"the model exited with status {status} at the end of its input")

    def _exit_status(self) -> str:
        status = processes.exit_status(self.process, EXIT_SECONDS)
        return "still running" if status is None else f"exit status {status}"

    def _fail(self, problem: str) -> NoReturn:
        try:  # what the model said on its way out
            while chunk := os.read(self.process.stderr.fileno(), 1 << 16):
                self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        except (OSError, ValueError):  # nothing more, for now
            pass
        processes.end(self.process)
        tail = self.stderr_tail.decode("utf-8", "replace").strip()
        raise ModelError(f"model {self.command!r}: {problem}; stderr: "
                         f"{tail[-500:] if tail else '(empty)'}")


def _shown(line: Any) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
    return repr(text if len(text) <= 100 else text[:100] + "...")
