"""The metrics the server loads itself: to check a spec and read its name, direction and
signature when a task registers it, and to write stats files. Each is loaded once (an
evaluator command then runs once for the server) and closed when the server stops."""

from __future__ import annotations

import threading
from typing import Dict

from evalproto.api.board import describe_metric
from evalproto.api.scoring import Metric
from evalproto.base.errors import EvalprotoError
from evalproto.service.errors import Invalid
from evalproto.service.store import MetricEntry
from evalproto.sources.specs import MetricSpec


class LoadedMetrics:
    """Metrics loaded in the server's process, by spec."""

    def __init__(self) -> None:
        """No metric loaded yet."""
        self._lock = threading.Lock()
        self._metrics: Dict[MetricSpec, Metric] = {}

    def get(self, spec: MetricSpec) -> Metric:
        """The metric of a spec, loaded on first use."""
        with self._lock:
            if spec not in self._metrics:
                self._metrics[spec] = Metric(spec)
            return self._metrics[spec]

    def entry(self, spec: MetricSpec) -> MetricEntry:
        """A metric as a task registers it: a bad spec, or a command that does not
        start, is refused."""
        try:
            metric = self.get(spec)
        except (EvalprotoError, ValueError, TypeError) as exc:
            raise Invalid(f"metric {spec.spec!r}: {exc}") from None
        described = describe_metric(metric)
        return MetricEntry(spec.spec, spec.kind, str(described["name"]),
                           str(described["signature"]), bool(described["higher_is_better"]))

    def close(self) -> None:
        """Stop the evaluator commands started here."""
        with self._lock:
            for metric in self._metrics.values():
                metric.close()
            self._metrics.clear()
