"""Metrics as the user names them: a built-in spec run in process (`-m "bleu -tok
intl"`), or a command that speaks the protocol (`-e "bleu-evaluator -lc"`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from evalproto.metrics import registry
from evalproto.sources.base import StatsSource
from evalproto.sources.process import EvaluatorProcess

IN_PROCESS, COMMAND = "in-process", "command"
KINDS = (IN_PROCESS, COMMAND)


@dataclass(frozen=True)
class MetricSpec:
    """An evaluator as the user names it: a registered evaluator's spec, run in
    process (kind "in-process", `-m "bleu -lc"`), or a command that speaks the
    protocol, run as a process (kind "command", `-e "bleu-evaluator -lc"`)."""

    kind: str
    spec: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a metric spec is of kind 'in-process' or 'command', got "
                             f"{self.kind!r}")

    @property
    def in_process(self) -> bool:
        """Whether the evaluator runs in this process (else it is a command)."""
        return self.kind == IN_PROCESS

    def build(self, timeout: Optional[float], copy: bool = False) -> StatsSource:
        """The evaluator, ready to score: built here, or started as a process whose
        replies may each take up to `timeout` seconds; as one of several copies (`copy`,
        -j), a process with one thread per kernel call."""
        if self.in_process:
            return registry.from_spec(self.spec)
        return EvaluatorProcess(self.spec, timeout=timeout, copy=copy)
