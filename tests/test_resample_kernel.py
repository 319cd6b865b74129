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


# -- the sums: counts @ rows, and approximate randomization's swapped sums -------------

def kernel_stream(seed):
    """A fresh generator's PCG64 state as the kernels take it."""
    state = np.random.default_rng(seed).bit_generator.state["state"]
    return (state["state"] >> 64, state["state"] & (2 ** 64 - 1), state["inc"] >> 64,
            state["inc"] & (2 ** 64 - 1))


def random_systems(n, dtypes, seed=0, order="F"):
    rng = np.random.default_rng(seed)
    widths = [10, 3, 7, 1, 5]
    return [np.asarray(rng.integers(0, np.iinfo(dtype).max + 1, size=(n, widths[i % 5])),
                       dtype=dtype, order=order) for i, dtype in enumerate(dtypes)]


@pytest.mark.parametrize("n", [1, 63, 64, 4096, 4097, 9000])
@pytest.mark.parametrize("dtypes", [[np.uint8] * 3, [np.uint8, np.uint16], [np.uint16] * 2])
@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("vnni", [True, False])
def test_products_are_numpys_integer_products(n, dtypes, order, vnni):
    """Every path of the kernel (AVX-512 VNNI where the CPU has it, four resamples and
    columns at a time; the remainders; uint16 statistics) adds up to numpy's int64
    product, the column order of the systems side by side."""
    systems = random_systems(n, dtypes, order=order)
    counts = np.random.default_rng(1).integers(0, 9, size=(13, n)).astype(np.uint8)
    expected = np.concatenate([counts.astype(np.int64) @ rows.astype(np.int64)
                               for rows in systems], axis=1)
    total = np.full(expected.shape, 5, np.int64)  # the products are added to it
    _resample.products(counts, systems, total, vnni=vnni)
    assert np.array_equal(total, expected + 5)


def test_products_take_counts_above_127_the_long_way():
    """VNNI reads counts as signed bytes: a block with a count of 128 or more is summed
    without it."""
    systems = random_systems(300, [np.uint8])
    counts = np.random.default_rng(2).integers(0, 4, size=(4, 300)).astype(np.uint8)
    counts[2, 7] = 255
    total = np.zeros((4, 10), np.int64)
    _resample.products(counts, systems, total)
    assert np.array_equal(total, counts.astype(np.int64) @ systems[0].astype(np.int64))


@pytest.mark.parametrize("counts, systems, total, message", [
    (np.zeros((2, 3)), [np.zeros((3, 2), np.uint8)], np.zeros((2, 2), np.int64), "uint8"),
    (np.zeros((2, 3), np.uint8), [np.zeros((3, 2))], np.zeros((2, 2), np.int64),
     "uint8 or uint16 arrays of n rows"),
    (np.zeros((2, 3), np.uint8), [np.zeros((4, 2), np.uint8)], np.zeros((2, 2), np.int64),
     "uint8 or uint16 arrays of n rows"),
    (np.zeros((2, 3), np.uint8), [np.zeros((3, 2), np.uint8)], np.zeros((2, 3), np.int64),
     "int64 array of one row"),
    (np.zeros((2, 3), np.uint8), [np.zeros((3, 2), np.uint8)], np.zeros((2, 2)),
     "int64 array of one row"),
])
def test_products_refuse_what_they_cannot_sum(counts, systems, total, message):
    with pytest.raises(ValueError, match=message):
        _resample.products(counts, systems, total)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 127, 128, 129, 200, 1000, 4099])
@pytest.mark.parametrize("first", [0, 5])
def test_randomization_sums_are_the_sums_of_numpys_swaps(n, first):
    """Trial t swaps segment s where bit t * n + s of sacrebleu's boolean draws is set,
    wherever that bit falls in the generator's 64-bit outputs; every split of the
    segments over threads adds up alike."""
    trials = 37
    systems = random_systems(n, [np.uint8, np.uint16, np.uint8], seed=n)
    swap = np.random.default_rng(12345).integers(2, size=(first + trials, n), dtype=bool)[first:]
    expected = np.concatenate([swap.astype(np.int64) @ rows.astype(np.int64)
                               for rows in systems], axis=1)
    for threads in (1, 2, 3):
        sums = np.full(expected.shape, -1, np.int64)  # every sum is set
        _resample.randomization_sums(*kernel_stream(12345), first, systems, sums,
                                     threads=threads)
        assert np.array_equal(sums, expected)


def test_randomization_sums_take_c_ordered_and_narrow_systems_alike():
    systems = random_systems(700, [np.uint8, np.uint8], order="C")
    fortran = [np.asfortranarray(rows) for rows in systems]
    sums = [np.zeros((9, 13), np.int64) for _ in range(2)]
    for given, into in zip((systems, fortran), sums):
        _resample.randomization_sums(*kernel_stream(1), 0, given, into)
    assert np.array_equal(*sums)


def test_randomization_sums_refuse_bad_arguments():
    rows = [np.zeros((5, 2), np.uint8)]
    with pytest.raises(ValueError, match="int64 array"):
        _resample.randomization_sums(*kernel_stream(1), 0, rows, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="first must be >= 0 and threads >= 1"):
        _resample.randomization_sums(*kernel_stream(1), 0, rows, np.zeros((3, 2), np.int64),
                                     threads=0)
    with pytest.raises(ValueError, match="at least one array"):
        _resample.randomization_sums(*kernel_stream(1), 0, [], np.zeros((3, 2), np.int64))
    with pytest.raises(ValueError, match="uint8 or uint16"):
        _resample.randomization_sums(*kernel_stream(1), 0, [np.zeros((5, 2), np.int8)],
                                     np.zeros((3, 2), np.int64))


def test_the_kernel_paths_give_numpys_shuffled_sums(monkeypatch):
    """resampling._shuffled_sums: by the kernel (whole statistics) and by numpy's products
    (EVALPROTO_PURE_PYTHON=1), the same float64 sums of every pair's pseudo-systems."""
    rng = np.random.default_rng(3)
    systems = [rng.integers(0, 256, size=(3001, 4)).astype(np.float64) for _ in range(3)]
    pairs = [(0, 1), (0, 2), (1, 2)]
    compiled = list(resampling._shuffled_sums(systems, pairs, 250, 7))
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
    reference = list(resampling._shuffled_sums(systems, pairs, 250, 7))
    assert sum(k for k, _ in compiled) == sum(k for k, _ in reference) == 250
    for pair in pairs:
        for side in (0, 1):
            assert np.array_equal(np.concatenate([sums[pair][side] for _, sums in compiled]),
                                  np.concatenate([sums[pair][side] for _, sums in reference]))


def test_many_trials_come_in_bounded_chunks():
    """--paired-ar-n 200000000: each kernel call's sums stay within _MAX_TRIAL_SUMS (a
    quarter of the trials once took 2 GB a pair of systems, and no progress for minutes)."""
    systems = [np.arange(64, dtype=np.uint8).reshape(16, 4) % 7 for _ in range(2)]
    chunks = resampling._shuffled_sums(systems, [(0, 1)], 200_000_000, 1)
    k, sums = next(chunks)
    assert k == resampling._MAX_TRIAL_SUMS // 8 and sums[0, 1][0].shape == (k, 4)
    chunks.close()


def test_no_segments_leave_the_kernels_out():
    """Tables without rows (nothing to swap or draw) are tested as numpy tests them."""
    empty = np.zeros((0, 3), np.uint8)
    result = resampling.approximate_randomization(empty, empty, lambda sums: {"x": sums[:, 0]},
                                                  50, 1)
    assert result["x"].p_value == 1 / 51


def test_approximate_randomization_counts_as_it_goes():
    """Each chunk's trials are counted and dropped: 12M trials of a pair once kept 20
    bytes a trial (every |difference|, then a copy of them all to count)."""
    import tracemalloc

    rng = np.random.default_rng(5)
    systems = [rng.integers(0, 9, size=(50, 1)).astype(np.uint8) for _ in range(2)]
    tracemalloc.start()
    try:
        result = resampling.randomization_pairs(systems, [(0, 1)],
                                                lambda sums: {"x": sums[:, 0]},
                                                12_000_000, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0 < result[0, 1]["x"].p_value <= 1
    assert peak < 100 * 2 ** 20, f"{peak / 2 ** 20:.0f} MB"
