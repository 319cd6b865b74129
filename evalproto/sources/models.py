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

import json
import os
import queue
import shlex
import threading
import time
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Tuple

from evalproto.base import processes
from evalproto.base.errors import EvalprotoError, SetupError
from evalproto.wire.protocol import LineTooLong, arrived_lines

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
        return "".join(json.dumps(reply, ensure_ascii=False) + "\n"
                       for reply in self.replies).encode("utf-8")


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
    began = time.monotonic()
    try:
        process = processes.spawn(argv, env=environment)
    except OSError as exc:
        problem = "command not found" if isinstance(exc, FileNotFoundError) else exc.strerror
        raise ModelError(f"cannot start the model {command!r}: {problem}") from None
    run = _Running(process, command)
    try:
        replies = run.replies(examples, output_keys, timeout)
        seconds = time.monotonic() - began
        run.read_memory()  # once more, while the model still lives
        run.finish()
        return ModelRun(replies, seconds, run.peak)
    finally:
        run.stop()


class _Running:
    """A model's process while it runs: its input written by a thread, its output read
    by another, its stderr's tail kept, its memory read every MEMORY_EVERY seconds."""

    def __init__(self, process: Any, command: str) -> None:
        self.process = process
        self.command = command
        self.lines: queue.Queue[Optional[List[Any]]] = queue.Queue()
        self.received: List[Any] = []
        self.ended = False
        self.stderr_tail = b""
        self.peak = 0
        self.stopping = threading.Event()
        for target, stream in ((self._read, process.stdout), (self._drain, process.stderr)):
            threading.Thread(target=target, args=(stream,), daemon=True).start()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()

    def replies(self, examples: Sequence[Example], output_keys: Sequence[str],
                timeout: Optional[float]) -> List[Dict[str, Any]]:
        writer = threading.Thread(target=self._write, args=(examples,), daemon=True)
        writer.start()
        replies = []
        for number, (key, _) in enumerate(examples, 1):
            line = self._next(timeout, number, key)
            replies.append(self._checked(line, number, key, output_keys))
        return replies

    def _write(self, examples: Sequence[Example]) -> None:
        stdin = self.process.stdin
        try:
            for key, inputs in examples:
                stdin.write(json.dumps({"id": key, **inputs}, ensure_ascii=False
                                       ).encode("utf-8") + b"\n")
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the model exited: its replies say so

    def _read(self, stdout: BinaryIO) -> None:
        for batch in arrived_lines(stdout):
            self.lines.put(batch)
        stdout.close()
        self.lines.put(None)

    def _drain(self, stderr: BinaryIO) -> None:
        while chunk := stderr.read1(65536):  # type: ignore[attr-defined]
            self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        stderr.close()

    def _sample(self) -> None:
        while not self.stopping.wait(MEMORY_EVERY):
            self.read_memory()

    def read_memory(self) -> None:
        """The peak so far: the most the process tree held at once at a reading, or the
        most the model's own process ever held, which Linux keeps."""
        pid = self.process.pid
        self.peak = max(self.peak, processes.tree_memory(pid), processes.peak_memory(pid))

    def _next(self, timeout: Optional[float], number: int, key: str) -> Any:
        """The model's next line, or its run's failure."""
        while not self.received and not self.ended:
            try:
                batch = self.lines.get(timeout=timeout)
            except queue.Empty:
                self._fail(f"example {number} (id {key!r}): no reply within {timeout:g} s "
                           f"(the model's --timeout); the model was stopped")
            if batch is None:
                self.ended = True
            else:
                self.received.extend(batch)
        if not self.received:
            status = self._exit_status()
            self._fail(f"example {number} (id {key!r}): the model's output ended before "
                       f"its reply ({status})")
        return self.received.pop(0)

    def _checked(self, line: Any, number: int, key: str,
                 output_keys: Sequence[str]) -> Dict[str, Any]:
        where = f"example {number} (id {key!r})"
        if isinstance(line, LineTooLong):
            self._fail(f"{where}: the reply is longer than {64} MiB")
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
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
        """End the model's input and check that it exits cleanly, having said nothing
        more."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        deadline = time.monotonic() + EXIT_SECONDS
        while not self.ended and time.monotonic() < deadline:
            try:
                batch = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if batch is None:
                self.ended = True
            else:
                self.received.extend(batch)
        if self.received:
            self._fail(f"the model wrote a line after its last reply: {_shown(self.received[0])}")
        status = processes.exit_status(self.process, max(0.0, deadline - time.monotonic()))
        if status is None:
            self._fail(f"the model did not exit within {EXIT_SECONDS:g} s of the end of its "
                       f"input")
        if status != 0:
            self._fail(f"the model exited with status {status} at the end of its input")

    def _exit_status(self) -> str:
        status = processes.exit_status(self.process, EXIT_SECONDS)
        return "still running" if status is None else f"exit status {status}"

    def _fail(self, problem: str) -> Any:
        self.stop()
        tail = self.stderr_tail.decode("utf-8", "replace").strip()
        raise ModelError(f"model {self.command!r}: {problem}; stderr: "
                         f"{tail[-500:] if tail else '(empty)'}")

    def stop(self) -> None:
        """Stop the model, group and all, and its memory's readings."""
        self.stopping.set()
        processes.end(self.process)


def _shown(line: Any) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
    return repr(text if len(text) <= 100 else text[:100] + "...")
