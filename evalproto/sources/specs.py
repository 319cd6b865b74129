"""Metrics as the user names them: a built-in spec run in process, or a command."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Optional

from evalproto.metrics import registry
from evalproto.sources.process import EvaluatorProcess
from evalproto.sources.pool import EvaluatorPool
from evalproto.stats.reductions import StatsSource


@dataclass(frozen=True)
class MetricSpec:
    """A built-in evaluator spec (`-m "bleu -tok intl"`) or an evaluator command (`-e`)."""

    kind: str  # "metric" or "evaluator"
    spec: str

    def build(self, timeout: Optional[float]) -> StatsSource:
        if self.kind == "metric":
            return registry.from_spec(self.spec)
        return EvaluatorProcess(self.spec, timeout=timeout)

    def open(self, stack: ExitStack, timeout: Optional[float], jobs: int = 1) -> StatsSource:
        """Build it, or a pool of `jobs` copies of it; processes are closed (and checked)
        when `stack` closes."""
        if jobs > 1:
            return stack.enter_context(EvaluatorPool(self, jobs, timeout))
        return stack.enter_context(self.build(timeout))
