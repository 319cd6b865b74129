"""Dask bags of (refs, hyp) items scored by any metric on the current Dask client."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from evalproto.sources import dask as cluster
from evalproto.sources.specs import IN_PROCESS
from evalproto.stats.resampling import column_sums


def bag_stats(bag: Any, spec: str, kind: str = IN_PROCESS,
              timeout: Optional[float] = None) -> np.ndarray:
    """The stats rows of a Dask bag of (refs, hyp) items, in the bag's order, computed
    on the current Dask client's workers (kind "command" for a protocol command)."""
    return cluster.bag_stats(bag, spec, kind, timeout)


def bag_score(bag: Any, spec: str, kind: str = IN_PROCESS,
              timeout: Optional[float] = None) -> float:
    """The corpus score of a Dask bag of (refs, hyp) items, on the current Dask client."""
    total = column_sums(bag_stats(bag, spec, kind, timeout))
    return float(cluster.remote_source(spec, kind, timeout).score_many(total[None, :])[0])
