"""The compiled bootstrap counter (native/resample.cpp) draws exactly what numpy draws:
the same counts, in float64 or uint8, and the generator left in the same state, from
any state, for any number of segments; the pure-Python path gives the same counts; a
count that uint8 cannot hold is never kept, and the chunk is drawn again in float64."""

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
    for k, dtype in ((1, np.float64), (4, np.uint8), (3, np.float64), (2, np.uint8)):
        counts = np.full((k, n), 77, dtype)  # every count is set
        assert resampling._draw_counts(ours, counts)
        assert np.array_equal(counts, numpy_counts(theirs, n, k))
        assert ours.bit_generator.state == theirs.bit_generator.state


def test_the_pure_python_path_counts_the_same(monkeypatch):
    compiled = drawn(3001, 40, 7)
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
    python = drawn(3001, 40, 7)
    assert np.array_equal(compiled, python)
    assert compiled.sum(axis=1).tolist() == [3001] * 40


@pytest.mark.parametrize("chunks, most", [(1000, 3 * 150), (4, 2 ** 27), (1, 7 * 150), (3, 1)])
def test_chunks_of_any_size_give_one_stream(monkeypatch, chunks, most):
    monkeypatch.setattr(resampling, "_CHUNKS", chunks)
    monkeypatch.setattr(resampling, "_MAX_COUNTS", most)
    counts = drawn(150, 1000, 12345)
    assert np.array_equal(counts, numpy_counts(np.random.default_rng(12345), 150, 1000))


def test_one_segment_is_drawn_every_time():
    assert drawn(1, 5, 12345).tolist() == [[1.0]] * 5


@pytest.mark.parametrize("n, out, message", [
    (1, np.zeros((2, 1)), r"n must be in \[2, 2\*\*32 - 1\]"),
    (2 ** 32, np.zeros((1, 2)), r"n must be in \[2, 2\*\*32 - 1\]"),
    (3, np.zeros((2, 3), dtype=np.float32), "float64 or uint8 array of whole rows"),
    (3, np.zeros((2, 3), dtype=np.int8), "float64 or uint8 array of whole rows"),
    (3, np.zeros(7), "float64 or uint8 array of whole rows"),
    (3, np.zeros((3, 6))[:, ::2], "contiguous"),
])
def test_bad_arguments_are_refused(n, out, message):
    with pytest.raises((ValueError, BufferError), match=message):
        _resample.draw_counts(0, 1, 0, 1, False, 0, n, out)


def test_a_count_beyond_the_limit_is_reported_and_the_state_still_advances():
    """Every count above `limit` (255 for uint8, lower here to make one happen) makes
    the kernel say the counts do not fit; the draws still go to the end of the chunk."""
    ours, theirs = np.random.default_rng(3), np.random.default_rng(3)
    counts = np.zeros((2, 5), np.uint8)
    state = ours.bit_generator.state["state"]
    high, low, has_uint32, uinteger, fits = _resample.draw_counts(
        state["state"] >> 64, state["state"] & (2 ** 64 - 1), state["inc"] >> 64,
        state["inc"] & (2 ** 64 - 1), False, 0, 5, counts, limit=1)
    expected = numpy_counts(theirs, 5, 2)
    assert not fits and expected.max() > 1
    assert (high << 64) | low == theirs.bit_generator.state["state"]["state"]
    assert np.array_equal(counts, expected)  # each below 256: stored, though over the limit


@pytest.mark.parametrize("pure", [False, True])
def test_a_chunk_that_does_not_fit_uint8_is_drawn_again_in_float64(monkeypatch, pure):
    """_drawn falls back to float64 counts of the same draws when _draw_counts says a
    count did not fit (made to happen here: in practice a segment is drawn a few times,
    never 256)."""
    if pure:
        monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
    real = resampling._draw_counts
    calls = []

    def overflowing(rng, counts):
        calls.append(counts.dtype)
        fits = real(rng, counts)
        return fits and counts.dtype != np.uint8

    monkeypatch.setattr(resampling, "_draw_counts", overflowing)
    rng, theirs = np.random.default_rng(9), np.random.default_rng(9)
    counts = resampling._drawn(rng, np.zeros((3, 40), np.uint8))
    assert counts.dtype == np.float64 and calls == [np.uint8, np.float64]
    assert np.array_equal(counts, numpy_counts(theirs, 40, 3))
    assert rng.bit_generator.state == theirs.bit_generator.state


def test_the_pure_python_draws_see_a_count_beyond_uint8(monkeypatch):
    """With n = 300 draws that all land on one segment (a generator made to), the
    numpy path reports that uint8 cannot hold the count."""
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")

    class Loaded:
        bit_generator = np.random.default_rng(0).bit_generator

        @staticmethod
        def choice(n, size, replace):
            return np.zeros(size, dtype=np.int64)  # every draw picks segment 0

    assert not resampling._draw_counts(Loaded(), np.zeros((1, 300), np.uint8))
    assert resampling._draw_counts(Loaded(), np.zeros((1, 300)))


def test_bootstrap_counts_stop_drawing_when_the_caller_stops():
    """Closing the generator early waits for the chunk being drawn ahead, so no thread
    writes into a buffer that is gone."""
    chunks = resampling.bootstrap_counts(50_000, 1000, 1)
    first = next(chunks).copy()
    chunks.close()
    assert first.sum(axis=1).tolist() == [50_000] * len(first)
