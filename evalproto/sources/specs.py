"""Metrics as the user names them: a built-in spec run in process (`-m "bleu -tok
intl"`), or a command that speaks the protocol (`-e "bleu-evaluator -lc"`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from evalproto.metrics import registry
from evalproto.sources.base import StatsSource
from evalproto.sources.process import EvaluatorProcess

KINDS = ("metric", "evaluator")


@dataclass(frozen=True)
class MetricSpec:
    """A built-in evaluator spec (kind "metric", run in process) or an evaluator
    command (kind "evaluator", run as a process)."""

    kind: str
    spec: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a metric is of kind 'metric' or 'evaluator', got {self.kind!r}")

    @property
    def in_process(self) -> bool:
        return self.kind == "metric"

    def build(self, timeout: Optional[float]) -> StatsSource:
        if self.in_process:
            return registry.from_spec(self.spec)
        return EvaluatorProcess(self.spec, timeout=timeout)
