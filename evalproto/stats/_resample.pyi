"""Bootstrap draw counts from numpy's random stream (native/resample.cpp)."""

from typing import Tuple

import numpy as np

def draw_counts(state_high: int, state_low: int, inc_high: int, inc_low: int,
                has_uint32: bool, uinteger: int, n: int, out: np.ndarray,
                limit: int = 255) -> Tuple[int, int, bool, int, bool]: ...
