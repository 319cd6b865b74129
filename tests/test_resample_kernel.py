"""The compiled bootstrap counter (native/resample.cpp) draws exactly what numpy draws:
the same counts, and the generator left in the same state, from any state, for any
number of segments; the pure-Python path gives the same counts."""

import numpy as np
import pytest

from evalproto.base.compiled import PURE_PYTHON_VARIABLE
from evalproto.stats import _resample, resampling


def numpy_counts(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """sacrebleu's draws, counted: rng.choice(n, (k, n)) and a bincount per row."""
    return np.stack([np.bincount(row, minlength=n)
                     for row in rng.choice(n, size=(k, n), replace=True)]).astype(float)


def drawn(n: int, samples: int, seed: int) -> np.ndarray:
    """Every chunk of bootstrap_counts, copied before the next overwrites it."""
    return np.concatenate([counts.copy() for counts in resampling.bootstrap_counts(n, samples,
                                                                                    seed)])


@pytest.mark.parametrize("n", [2, 3, 7, 150, 1001, 65535, 65536, 70001])
@pytest.mark.parametrize("seed", [0, 12345])
@pytest.mark.parametrize("half_drawn", [False, True])
def test_counts_and_state_equal_numpys(n, seed, half_drawn):
    """`half_drawn` starts from a generator holding the upper half of a 64-bit draw,
    as one after an odd number of 32-bit draws does; three calls check that each
    continues where the last one left the stream."""
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    if half_drawn:
        ours.integers(0, 10, size=3)
        theirs.integers(0, 10, size=3)
    for k in (1, 4, 3):
        counts = np.full((k, n), np.nan)  # every count is set
        resampling._draw_counts(ours, counts)
        assert np.array_equal(counts, numpy_counts(theirs, n, k))
        assert ours.bit_generator.state == theirs.bit_generator.state


def test_the_pure_python_path_counts_the_same(monkeypatch):
    compiled = drawn(3001, 40, 7)
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
    python = drawn(3001, 40, 7)
    assert np.array_equal(compiled, python)
    assert compiled.sum(axis=1).tolist() == [3001] * 40


@pytest.mark.parametrize("minimum, most", [(1, 3 * 150), (16, 2 ** 24), (5, 7 * 150)])
def test_chunks_of_any_size_give_one_stream(monkeypatch, minimum, most):
    monkeypatch.setattr(resampling, "_VALUES_PER_CHUNK", 64)
    monkeypatch.setattr(resampling, "_MIN_RESAMPLES", minimum)
    monkeypatch.setattr(resampling, "_MAX_COUNTS", most)
    counts = drawn(150, 1000, 12345)
    assert np.array_equal(counts, numpy_counts(np.random.default_rng(12345), 150, 1000))


def test_one_segment_is_drawn_every_time():
    assert drawn(1, 5, 12345).tolist() == [[1.0]] * 5


@pytest.mark.parametrize("n, out, message", [
    (1, np.zeros((2, 1)), r"n must be in \[2, 2\*\*32 - 1\]"),
    (2 ** 32, np.zeros((1, 2)), r"n must be in \[2, 2\*\*32 - 1\]"),
    (3, np.zeros((2, 3), dtype=np.float32), "float64 array of whole rows"),
    (3, np.zeros(7), "float64 array of whole rows"),
    (3, np.zeros((3, 6))[:, ::2], "contiguous"),
])
def test_bad_arguments_are_refused(n, out, message):
    with pytest.raises((ValueError, BufferError), match=message):
        _resample.draw_counts(0, 1, 0, 1, False, 0, n, out)
