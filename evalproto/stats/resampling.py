"""Bootstrap confidence intervals and paired significance tests over stats rows.

Every test uses sacrebleu's random draws and arithmetic, so for the same seed and sample
count the figures are sacrebleu's to the bit: `default_rng(seed).choice(n, (N, n))`
picks the segments of N bootstrap resamples, `default_rng(seed).integers(2, (N, n),
dtype=bool)` the swaps of N approximate-randomization trials, and a resample's
statistics are summed in float32 for the metrics that sacrebleu sums so (BLEU, chrF,
TER: see Evaluator.resample_dtype) before they are scored.

What differs is how: a resampled sum is `counts @ rows`, a chunk of resamples at a
time, never sacrebleu's float32 tensor of resamples x segments x stats, so memory
grows with chunk x segments. When every partial sum is exact in float32 (counts, and
averages over 1, 2 or 4 references, in corpora of up to millions of tokens), the order
of the additions does not matter and those sums are exactly sacrebleu's. Otherwise
(TER's averages over 3 references) the rows are added in sacrebleu's draw order, from
the same draws, unless that would take more than MAX_DRAWN row gathers: then the sums
are the exact float64 ones (sacrebleu's float32 sums are rounded there, and it could
not hold the corpus anyway). numpy continues a stream exactly across chunked calls,
provided each chunk of boolean draws holds a multiple of 32 values, which is why
chunks are multiples of 32 rows. The bootstrap's draws are counted by a compiled
kernel that follows numpy's own steps (native/resample.cpp; numpy's choice and
bincount with EVALPROTO_PURE_PYTHON=1), and every system of a table is resampled in
one pass over the same draws, as the paired tests and sacrebleu's intervals need.

Rows may come in any numeric type (a corpus's rows are held in the narrowest one that
keeps them exact, evalproto.base.narrow): a figure is always the one their float64
values give. Where the statistics are whole numbers up to 65535 and every sum is exact,
compiled kernels add them up in integers (the same sums, in any order): the bootstrap's
`counts @ rows` (`products`) and approximate randomization's swapped sums
(`randomization_sums`, which reads the swaps' bits from numpy's stream where each trial's
are, so that it never holds them).

A metric may give several figures (LM Challenge's rates): `Figures` maps summed
vectors to each figure's values, and every reduction here is done figure by figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.compiled import compiled, kernel_threads, pure_python
from evalproto.base.errors import EvalprotoError
from evalproto.base.narrow import as_whole

DEFAULT_SEED = 12345
"""sacrebleu's default seed for its bootstrap resamples, so that intervals equal its own."""
_VALUES_PER_CHUNK = 2 ** 18  # small enough to stay in cache: faster, and little memory
_MAX_COUNTS = 2 ** 28
"""Bootstrap counts per chunk at most (256 MB in uint8), however many segments there
are: each chunk's product copies every system's rows once, so chunks are as large as
this allows (268 resamples of a million segments, 26 of ten million)..."""
_CHUNKS = 4
"""...but at least this many where there are enough resamples, so that drawing the next
chunk overlaps the products of this one (and approximate randomization's trials come in
as many chunks, for progress)."""
_MAX_TRIAL_SUMS = 2 ** 21
"""Approximate randomization's swapped sums per kernel call at most (16 MB in int64,
and every pair's pseudo-systems from them): --paired-ar-n 200000000 stays in bounded
memory, and its progress moves."""
_KERNEL_TYPES = (np.dtype(np.uint8), np.dtype(np.uint16))
"""The types of the statistics the compiled sums take."""
FLOAT32_EXACT = 2 ** 24
"""Whole numbers up to this are exact in float32."""
FLOAT64_EXACT = 2.0 ** 53
"""Whole numbers up to this are exact in float64."""
MAX_DRAWN = 10 ** 8
"""The most row gathers per system spent on sums in sacrebleu's draw order (see the
docstring)."""

Figures = Callable[[np.ndarray], Dict[str, np.ndarray]]
"""Each figure's values for a (k, d) array of summed statistics, as (k,) arrays."""
Advance = Callable[[int], None]
"""Told how many resamples (or trials) are done, chunk by chunk, to show progress."""


def _nothing(count: int) -> None:
    pass


def column_sums(rows: np.ndarray) -> np.ndarray:
    """The sum of each column, added row after row, as sacrebleu adds segment statistics
    (`sum_of_lists`): for fractional statistics (TER's average reference lengths) numpy's
    pairwise summation of a contiguous column would differ in the last bits. numpy
    reduces the first axis of a C-ordered array of two or more columns row by row;
    tests/test_statistics.py checks that it still does. Whole numbers held as such
    (evalproto.base.narrow) whose every partial sum is exact in float64 add up alike in
    any order: in integers, without a float64 copy."""
    if rows.dtype.kind in "iu" and _exact_sums(rows, FLOAT64_EXACT):
        return rows.sum(axis=0, dtype=np.int64).astype(np.float64)
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    if rows.ndim == 2 and rows.shape[1] == 1:
        return column_sums(np.hstack([rows, np.zeros_like(rows)]))[:1]
    return rows.sum(axis=0)


def checked_total(rows: np.ndarray, stat_names: Sequence[str], what: str) -> np.ndarray:
    """`column_sums`, refusing rows that hold a statistic that is not a finite number
    (named by its row) and a sum that overflows a double (rows of 1e308 each): no score
    can be computed from either, and neither must become one."""
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, as an error
        total = column_sums(rows)
    broken = np.flatnonzero(~np.isfinite(total))
    if len(broken):
        column = int(broken[0])
        name = stat_names[column] if column < len(stat_names) else "a statistic"
        found = np.flatnonzero(~np.isfinite(rows[:, column]))
        if len(found):
            row = int(found[0])
            raise EvalprotoError(f"{what}: row {row + 1}: the statistic {name} is "
                                 f"{rows[row, column]}, not a finite number; statistics are "
                                 f"finite numbers")
        raise EvalprotoError(f"{what}: the statistic {name} adds up beyond the largest "
                             f"number a double holds; no score can be computed")
    return total


def _chunks(samples: int, n: int) -> Iterator[int]:
    """Sizes of successive chunks of resamples: multiples of 32 rows, about 256k values."""
    rows = max(32, _VALUES_PER_CHUNK // max(n, 1) // 32 * 32)
    for start in range(0, samples, rows):
        yield min(rows, samples - start)


def _resample_chunks(samples: int, n: int) -> Iterator[int]:
    """Sizes of successive chunks of bootstrap resamples: a quarter of them (_CHUNKS),
    but at most _MAX_COUNTS counts, in fours where there are four (the compiled products
    take four resamples at a time; bootstrap draws continue exactly across chunks of any
    size)."""
    rows = max(1, min(-(-samples // _CHUNKS), _MAX_COUNTS // max(n, 1)))
    rows = rows // 4 * 4 or rows
    for start in range(0, samples, rows):
        yield min(rows, samples - start)


_STATE_BITS = (1 << 64) - 1


def _draw_counts(rng: np.random.Generator, counts: np.ndarray) -> bool:
    """Set each row of `counts` (k, n; float64 or uint8) to how often each segment is
    drawn by `rng.choice(n, n)`, the rows one resample after another, leaving `rng`
    where numpy would: by the compiled kernel when the generator is numpy's PCG64 and
    n is in its 32-bit range, by numpy otherwise. Whether every count fits the dtype
    (a uint8 count above 255 is wrong; in practice a segment is drawn a few times)."""
    k, n = counts.shape
    state: Dict[str, Any] = dict(rng.bit_generator.state)
    if pure_python() or state["bit_generator"] != "PCG64" or not 2 <= n < 2 ** 32:
        fits = True
        for row, picks in zip(counts, rng.choice(n, size=(k, n), replace=True)):
            drawn = np.bincount(picks, minlength=n)
            fits &= counts.dtype == np.float64 or int(drawn.max(initial=0)) <= 255
            row[:] = drawn
        return fits
    position, increment = state["state"]["state"], state["state"]["inc"]
    high, low, has_uint32, uinteger, fits = compiled("evalproto.stats._resample").draw_counts(
        position >> 64, position & _STATE_BITS, increment >> 64, increment & _STATE_BITS,
        bool(state["has_uint32"]), state["uinteger"], n, counts)
    state["state"]["state"] = (high << 64) | low
    state["has_uint32"], state["uinteger"] = int(has_uint32), uinteger
    rng.bit_generator.state = state
    return fits


def _drawn(rng: np.random.Generator, counts: np.ndarray) -> np.ndarray:
    """`counts` drawn (see _draw_counts), or, if a count did not fit its uint8, the
    same draws again in a new float64 array."""
    state = rng.bit_generator.state
    if _draw_counts(rng, counts):
        return counts
    rng.bit_generator.state = state
    wide = np.empty(counts.shape)
    _draw_counts(rng, wide)
    return wide


def bootstrap_counts(n: int, samples: int, seed: Optional[int]) -> Iterator[np.ndarray]:
    """(k, n) arrays: how often each segment is drawn in each of the next k resamples,
    from sacrebleu's draws; uint8 (float64 for a chunk with a count above 255, see
    _drawn), so that a chunk holds eight times the resamples of float64. The next
    chunk is drawn on a thread of its own while the caller works on this one (the
    compiled draws and numpy's products release the GIL), into the other of two
    buffers, which are reused: a new array per chunk is faulted into memory anew,
    which on a million segments took longer than the draws. An array is valid until
    the caller asks for the next."""
    from concurrent.futures import ThreadPoolExecutor  # here: a corpus score never needs it

    rng = np.random.default_rng(seed)
    sizes = list(_resample_chunks(samples, n))
    if not sizes:
        return
    if kernel_threads() < 2:  # no CPU for a second thread: each chunk drawn when due
        alone = np.empty((sizes[0], n), np.uint8)
        for size in sizes:
            yield _drawn(rng, alone[:size])
        return
    buffers = [np.empty((sizes[0], n), np.uint8) for _ in range(min(2, len(sizes)))]
    with ThreadPoolExecutor(1, thread_name_prefix="bootstrap-draws") as drawer:
        drawn = drawer.submit(_drawn, rng, buffers[0][:sizes[0]])
        for number in range(len(sizes)):
            counts = drawn.result()
            if number + 1 < len(sizes):
                drawn = drawer.submit(_drawn, rng, buffers[(number + 1) % 2][:sizes[number + 1]])
            yield counts


def _exact_sums(rows: np.ndarray, whole_limit: float) -> bool:
    """Whether every sum of up to len(rows) rows is exact in a float type whose whole
    numbers are exact up to `whole_limit` (and so the same in any order): the statistics
    are multiples of 1/4, and n times the largest of a column, in quarters, is below it."""
    if rows.dtype.kind in "iu":  # whole numbers: only their size can make a sum inexact
        largest = max(int(rows.max(initial=0)), -int(rows.min(initial=0)))
        return len(rows) * 4 * largest < whole_limit
    quarters = rows * 4
    return bool(np.array_equal(quarters, np.round(quarters))) and \
        len(rows) * float(np.abs(quarters).max(initial=0)) < whole_limit


_PRODUCT_BLOCK = 4096
"""Segments per block of `counts @ rows`: OpenBLAS took twice as long over a million
segments at once as over blocks whose counts and rows stay in cache."""


def _whole_rows(systems: Sequence[np.ndarray]) -> Optional[List[np.ndarray]]:
    """Every system's rows in one of _KERNEL_TYPES (as they are if they are; copies of
    float64 rows in Fortran order, as evalproto.base.narrow holds rows), or None if a
    system has other values, or the compiled kernels are not to be used."""
    if pure_python():
        return None
    whole = [as_whole(rows, _KERNEL_TYPES) for rows in systems]
    return None if any(rows is None for rows in whole) else whole  # type: ignore[return-value]


def _products(counts: np.ndarray, systems: Sequence[np.ndarray], together: bool,
              whole: Optional[Sequence[np.ndarray]] = None) -> List[np.ndarray]:
    """counts @ rows for each system's rows. `together` (only where every sum is exact,
    so that the order of the additions cannot matter): the systems' rows side by side
    in one product, several times faster on 50 columns than on 10, and in integers by
    the compiled kernel where the statistics are also `whole` (_whole_rows) and the
    counts uint8. Otherwise each system's own product, whose last bits do not depend on
    the other systems (a test of two systems then equals that pair in a pass over
    three)."""
    if not together:
        return [_product(counts, [rows])[0] for rows in systems]
    if whole is not None and counts.dtype == np.uint8:
        total = np.zeros((len(counts), sum(rows.shape[1] for rows in whole)), np.int64)
        compiled("evalproto.stats._resample").products(counts, whole, total)
        return _split(total.astype(np.float64), whole)
    return _product(counts, systems)


def _split(sums: np.ndarray, systems: Sequence[np.ndarray]) -> List[np.ndarray]:
    """Sums of the systems' rows side by side, split into each system's."""
    return np.split(sums, np.cumsum([rows.shape[1] for rows in systems])[:-1], axis=1)


def _product(counts: np.ndarray, systems: Sequence[np.ndarray]) -> List[np.ndarray]:
    """counts @ rows of the systems side by side, over blocks of segments (a block's
    counts in float64), on one BLAS thread: the other core draws the next chunk (see
    bootstrap_counts)."""
    from threadpoolctl import threadpool_limits  # here: a corpus score never needs it

    k, n = counts.shape
    widths = [rows.shape[1] for rows in systems]
    total = np.zeros((k, sum(widths)))
    block_counts = np.empty((k, min(n, _PRODUCT_BLOCK)))
    block_rows = np.empty((min(n, _PRODUCT_BLOCK), sum(widths)))
    with threadpool_limits(1, user_api="blas"):
        for start in range(0, n, _PRODUCT_BLOCK):
            size = min(n - start, _PRODUCT_BLOCK)
            np.copyto(block_counts[:, :size], counts[:, start:start + size])
            np.concatenate([rows[start:start + size] for rows in systems], axis=1,
                           out=block_rows[:size])
            total += block_counts[:, :size] @ block_rows[:size]
    return _split(total, systems)


def resampled_sums(systems: Sequence[np.ndarray], samples: int, seed: Optional[int],
                   dtype: type = np.float64, advance: Advance = _nothing
                   ) -> Iterator[List[np.ndarray]]:
    """The sums of the next chunk of bootstrap resamples of each system's rows (all
    systems drawn alike), in `dtype` as sacrebleu sums them (see the docstring)."""
    n = len(systems[0])
    in_float32 = dtype != np.float64 and all(_exact_sums(rows, FLOAT32_EXACT) for rows in systems)
    exact = dtype == np.float64 or in_float32
    if exact or n * samples > MAX_DRAWN:
        together = in_float32 or all(_exact_sums(rows, FLOAT64_EXACT) for rows in systems)
        whole = _whole_rows(systems) if together else None
        for counts in bootstrap_counts(n, samples, seed):
            sums = _products(counts, systems, together, whole)
            yield [total.astype(dtype) for total in sums] if exact else sums
            advance(len(counts))
        return
    converted: List[np.ndarray] = [rows.astype(dtype) for rows in systems]
    rng = np.random.default_rng(seed)
    for k in _chunks(samples, n):
        picks = rng.choice(n, size=(k, n), replace=True)
        yield [np.stack([rows[resample].sum(0) for resample in picks]) for rows in converted]
        advance(k)


def resampled_figures(systems: Sequence[np.ndarray], figures: Figures, samples: int,
                      seed: Optional[int], dtype: type = np.float64,
                      advance: Advance = _nothing) -> List[Dict[str, np.ndarray]]:
    """Each system's figures on each of `samples` bootstrap resamples of its rows, all
    systems drawn alike in one pass: what every interval and paired bootstrap reads."""
    parts: List[Dict[str, List[np.ndarray]]] = [{} for _ in systems]
    for sums in resampled_sums(systems, samples, seed, dtype, advance):
        for part, total in zip(parts, sums):
            for name, values in figures(total).items():
                part.setdefault(name, []).append(values)
    return [{name: np.concatenate(values) for name, values in part.items()} for part in parts]


def bootstrap(rows: np.ndarray, figures: Figures, samples: int, seed: Optional[int],
              dtype: type = np.float64, advance: Advance = _nothing) -> Dict[str, np.ndarray]:
    """Each figure's value on each of `samples` bootstrap resamples of the rows."""
    return resampled_figures([rows], figures, samples, seed, dtype, advance)[0]


def confidence_interval(values: np.ndarray) -> Tuple[float, float]:
    """Mean and half-width of the 95% interval of resampled values, as sacrebleu's
    `Score.estimate_ci` computes them for one system's --confidence: over the values as
    scalars, with statistics.mean."""
    import statistics  # here: a plain corpus score, whose start-up is timed, never needs it

    ordered = sorted(values.tolist() if values.dtype == np.float64 else list(values))
    lower = len(ordered) // 40
    upper = len(ordered) - lower - 1
    return statistics.mean(ordered), 0.5 * (ordered[upper] - ordered[lower])


def estimate_ci(values: np.ndarray) -> Tuple[float, float]:
    """Mean and half-width of the 95% interval, as sacrebleu's paired tests compute them
    (`significance.estimate_ci`: numpy's sort and mean)."""
    ordered = np.sort(values)
    lower = len(ordered) // 40
    upper = len(ordered) - lower - 1
    return ordered.mean(), 0.5 * (ordered[upper] - ordered[lower])


def p_value(sample_statistics: np.ndarray, observed: float, inclusive: bool = False) -> float:
    """The share of samples above the observed statistic, with add-one smoothing.
    sacrebleu counts samples strictly above it; `inclusive` counts ties too, the usual
    Monte Carlo estimate, which gives identical systems p = 1 instead of 1/(N+1)."""
    return (_beyond(sample_statistics, observed, inclusive) + 1) / (len(sample_statistics) + 1)


def _beyond(sample_statistics: np.ndarray, observed: float, inclusive: bool) -> int:
    """How many samples are above the observed statistic (or tie it, `inclusive`)."""
    above = sample_statistics >= observed if inclusive else sample_statistics > observed
    return int(np.sum(above))


@dataclass
class PairedResult:
    p_value: float
    mean: Optional[float] = None
    ci: Optional[float] = None


def bootstrap_p_value(baseline: np.ndarray, system: np.ndarray, observed: float,
                      inclusive: bool = False) -> float:
    """The paired bootstrap's p-value (Koehn 2004, as sacrebleu's --paired-bs) from two
    systems' values on the same resamples: the share of centred absolute differences
    above the observed absolute difference."""
    differences = np.abs(system - baseline)
    return p_value(differences - differences.mean(), observed, inclusive)


def observed_differences(figures: Figures, baseline: np.ndarray,
                         system: np.ndarray) -> Dict[str, float]:
    """Each figure's absolute difference between the two systems' corpus values."""
    values = figures(np.stack([column_sums(baseline), column_sums(system)]))
    return {name: abs(float(pair[0]) - float(pair[1])) for name, pair in values.items()}


def paired_bootstrap(baseline: np.ndarray, system: np.ndarray, figures: Figures,
                     samples: int, seed: Optional[int], dtype: type = np.float64,
                     inclusive: bool = False, advance: Advance = _nothing
                     ) -> Dict[str, PairedResult]:
    """Paired bootstrap resampling (Koehn 2004), as sacrebleu's --paired-bs: both
    systems are scored on the same resamples; the p-value is that of the centred
    absolute score differences exceeding the observed difference; the interval is the
    system's, over the same resamples."""
    base, values = resampled_figures([baseline, system], figures, samples, seed, dtype,
                                     advance)
    observed = observed_differences(figures, baseline, system)
    results = {}
    for name in base:
        mean, ci = estimate_ci(values[name])
        results[name] = PairedResult(
            bootstrap_p_value(base[name], values[name], observed[name], inclusive), mean, ci)
    return results


def randomization_pairs(systems: Sequence[np.ndarray], pairs: Sequence[Tuple[int, int]],
                        figures: Figures, trials: int, seed: Optional[int],
                        inclusive: bool = False, advance: Advance = _nothing
                        ) -> Dict[Tuple[int, int], Dict[str, PairedResult]]:
    """Paired approximate randomization (Riezler and Maxwell 2005), as sacrebleu's
    --paired-ar, of each (i, j) pair of systems: each trial swaps each segment's rows
    between the two systems with probability 1/2 (sacrebleu sums its trials in float64).
    Every pair is tested on the same swaps, those of a test of that pair alone."""
    observed = {(i, j): observed_differences(figures, systems[i], systems[j]) for i, j in pairs}
    above: Dict[Tuple[int, int], Dict[str, int]] = {pair: {} for pair in pairs}
    done = 0
    for k, shuffled in _shuffled_sums(systems, pairs, trials, seed):
        for pair, (first, second) in shuffled.items():  # counted as they come: bounded memory
            second_values = figures(second)
            for name, values in figures(first).items():
                beyond = _beyond(np.abs(values - second_values[name]), observed[pair][name],
                                 inclusive)
                above[pair][name] = above[pair].get(name, 0) + beyond
        done += k
        advance(k)
    return {pair: {name: PairedResult((count + 1) / (done + 1)) for name, count in found.items()}
            for pair, found in above.items()}


Shuffled = Dict[Tuple[int, int], Tuple[np.ndarray, np.ndarray]]
"""For each pair (i, j), the float64 sums of the trials' two pseudo-systems: i's rows
where a segment is swapped and j's elsewhere, and the other way round."""


def _shuffled_sums(systems: Sequence[np.ndarray], pairs: Sequence[Tuple[int, int]],
                   trials: int, seed: Optional[int]) -> Iterator[Tuple[int, Shuffled]]:
    """(trials in the chunk, their Shuffled sums), a chunk at a time, from sacrebleu's
    swaps: `default_rng(seed).integers(2, (trials, n), dtype=bool)`. By the compiled
    kernel where the statistics are whole (_whole_rows) and every sum exact in float64:
    each system's swapped sums X, from which i's where swapped and j's elsewhere are
    X_i + (total_j - X_j), exactly. Otherwise by numpy's products, chunks of a multiple
    of 32 trials' swaps at a time (so that numpy continues the stream exactly)."""
    whole = _whole_rows(systems) if len(systems[0]) else None
    if whole is not None and all(_exact_sums(rows, FLOAT64_EXACT) for rows in whole):
        yield from _shuffled_by_kernel(whole, pairs, trials, seed)
        return
    systems = [np.asarray(rows, dtype=np.float64) for rows in systems]
    rng = np.random.default_rng(seed)
    for k in _chunks(trials, len(systems[0])):
        swap = rng.integers(2, size=(k, len(systems[0])), dtype=bool)
        keep = (~swap).astype(np.float64)
        swapped = swap.astype(np.float64)
        yield k, {(i, j): (swapped @ systems[i] + keep @ systems[j],
                           keep @ systems[i] + swapped @ systems[j]) for i, j in pairs}


def _shuffled_by_kernel(whole: Sequence[np.ndarray], pairs: Sequence[Tuple[int, int]],
                        trials: int, seed: Optional[int]) -> Iterator[Tuple[int, Shuffled]]:
    """_shuffled_sums by native/resample.cpp's randomization_sums, a quarter of the trials
    at a time (each call builds its tables anew), at most _MAX_TRIAL_SUMS sums, on the
    CPUs the process may use."""
    kernel = compiled("evalproto.stats._resample").randomization_sums
    state = np.random.default_rng(seed).bit_generator.state["state"]
    stream = (state["state"] >> 64, state["state"] & _STATE_BITS, state["inc"] >> 64,
              state["inc"] & _STATE_BITS)
    totals = [rows.sum(axis=0, dtype=np.int64) for rows in whole]
    width = sum(rows.shape[1] for rows in whole)
    step = max(1, min(-(-trials // _CHUNKS), _MAX_TRIAL_SUMS // width))
    for first in range(0, trials, step):
        sums = np.empty((min(step, trials - first), width), np.int64)
        kernel(*stream, first, whole, sums, threads=kernel_threads())
        swapped = _split(sums, whole)
        yield len(sums), {(i, j): ((swapped[i] - swapped[j] + totals[j]).astype(np.float64),
                                   (swapped[j] - swapped[i] + totals[i]).astype(np.float64))
                          for i, j in pairs}


def approximate_randomization(baseline: np.ndarray, system: np.ndarray, figures: Figures,
                              trials: int, seed: Optional[int], inclusive: bool = False,
                              advance: Advance = _nothing) -> Dict[str, PairedResult]:
    """Paired approximate randomization of two systems (see `randomization_pairs`)."""
    return randomization_pairs([baseline, system], [(0, 1)], figures, trials, seed,
                               inclusive, advance)[0, 1]
