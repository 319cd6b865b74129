"""Pair counts of Kendall-style statistics (native/kendall.cpp)."""

import numpy as np

def pair_counts(metric: np.ndarray, human: np.ndarray, starts: np.ndarray, epsilon: float,
                threshold: float, out: np.ndarray, threads: int = 1,
                distinct: bool = True) -> None: ...
