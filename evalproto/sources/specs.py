"""Metrics as the user names them: a built-in spec run in process (`-m "bleu -tok
intl"`), or a command that speaks the protocol (`-e "bleu-evaluator -lc"`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Union

from evalproto.metrics import registry
from evalproto.metrics.evaluator import Evaluator
from evalproto.sources.process import EvaluatorProcess


class Kind(str, enum.Enum):
    """How a metric runs: in this process, or as a command over the protocol. A str, so
    that stats files and the service's database keep the plain words."""

    IN_PROCESS = "in-process"
    COMMAND = "command"

    def __str__(self) -> str:
        return self.value


IN_PROCESS, COMMAND = Kind.IN_PROCESS, Kind.COMMAND


@dataclass(frozen=True)
class MetricSpec:
    """An evaluator as the user names it: a registered evaluator's spec, run in
    process (kind "in-process", `-m "bleu -lc"`), or a command that speaks the
    protocol, run as a process (kind "command", `-e "bleu-evaluator -lc"`)."""

    kind: Kind
    spec: str

    def __init__(self, kind: Union[Kind, str], spec: str) -> None:
        try:
            checked = Kind(kind)
        except ValueError:
            raise ValueError(f"a metric spec is of kind 'in-process' or 'command', got "
                             f"{kind!r}") from None
        object.__setattr__(self, "kind", checked)
        object.__setattr__(self, "spec", spec)

    @property
    def in_process(self) -> bool:
        """Whether the evaluator runs in this process (else it is a command)."""
        return self.kind is Kind.IN_PROCESS

    def build(self, timeout: Optional[float]) -> Union[Evaluator, EvaluatorProcess]:
        """The evaluator, ready to score: built here, or started as a process whose
        replies may each take up to `timeout` seconds."""
        if self.in_process:
            return registry.from_spec(self.spec)
        return EvaluatorProcess(self.spec, timeout=timeout)
