"""Bootstrap and approximate randomization sums from numpy's random stream
(native/resample.cpp)."""

from typing import Sequence, Tuple

import numpy as np

def draw_counts(state_high: int, state_low: int, inc_high: int, inc_low: int,
                has_uint32: bool, uinteger: int, n: int, out: np.ndarray,
                limit: int = 255) -> Tuple[int, int, bool, int, bool]: ...
def products(counts: np.ndarray, systems: Sequence[np.ndarray], out: np.ndarray,
             vnni: bool = True) -> None: ...
def randomization_sums(state_high: int, state_low: int, inc_high: int, inc_low: int,
                       first: int, systems: Sequence[np.ndarray], out: np.ndarray,
                       threads: int = 1) -> None: ...
