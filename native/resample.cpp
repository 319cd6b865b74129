// evalproto.stats._resample: the bootstrap's draw counts and sums, and approximate
// randomization's sums, from numpy's own random stream.
//
// sacrebleu draws a bootstrap resample with numpy.random.default_rng(seed).choice(n,
// (N, n)), which is Generator.integers(0, n): numpy's PCG64 bit generator (a 128-bit
// LCG with the XSL-RR output), each 64-bit output split into two 32-bit draws (the
// low half first, the high half kept in the generator's state), and Lemire's
// multiply-and-reject to bring a 32-bit draw into [0, n). `draw_counts` runs those same
// steps and counts how often each segment is drawn, without the n int64 picks that
// numpy would write and bincount would read. `products` sums each resample's rows,
// weighted by those counts, in integers, where statistics are small whole numbers.
//
// Approximate randomization draws integers(2, (N, n), dtype=bool): bit p of the stream
// of 64-bit outputs (least significant first) is trial p / n's swap of segment p % n.
// `randomization_sums` adds up each trial's swapped rows without drawing the bits in
// order: it jumps the generator to where a trial's bits for a range of segments are
// (an LCG can jump ahead in a few multiplications), so that the range's tables of sums
// stay in cache for every trial.
//
// tests/test_resample_kernel.py checks all three against numpy.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define EVALPROTO_X86 1
// Loops the compiler vectorizes, built again for wider vectors and chosen at run time.
#define VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VECTOR_CLONES
#endif
#if defined(__GNUC__)
// Inlined into each clone, so that it is compiled for the clone's vectors too.
#define IN_CLONES inline __attribute__((always_inline))
#else
#define IN_CLONES inline
#endif

namespace {

#if defined(__SIZEOF_INT128__)
using u128 = unsigned __int128;
inline u128 make_u128(uint64_t high, uint64_t low) { return (static_cast<u128>(high) << 64) | low; }
inline uint64_t high_of(u128 value) { return static_cast<uint64_t>(value >> 64); }
inline uint64_t low_of(u128 value) { return static_cast<uint64_t>(value); }
#else
#error "the bootstrap kernel needs a compiler with 128-bit integers (gcc or clang)"
#endif

// numpy's PCG64: PCG_DEFAULT_MULTIPLIER_128 and its has_uint32 / uinteger halves.
const u128 MULTIPLIER = make_u128(2549297995355413924ULL, 4865540595714422341ULL);

struct Pcg64 {
    u128 state;
    u128 increment;
    bool has_uint32;
    uint32_t uinteger;

    uint64_t next64() {
        state = state * MULTIPLIER + increment;
        const uint64_t folded = high_of(state) ^ low_of(state);
        const unsigned rotation = static_cast<unsigned>(state >> 122);
        return (folded >> rotation) | (folded << ((64 - rotation) & 63));
    }

    uint32_t next32() {
        if (has_uint32) {
            has_uint32 = false;
            return uinteger;
        }
        const uint64_t next = next64();
        has_uint32 = true;
        uinteger = static_cast<uint32_t>(next >> 32);
        return static_cast<uint32_t>(next);
    }

    // A draw from [0, bound) as numpy's buffered_bounded_lemire_uint32 makes it
    // (its `rng` is bound - 1).
    uint32_t below(uint32_t bound) {
        uint64_t product = static_cast<uint64_t>(next32()) * bound;
        uint32_t leftover = static_cast<uint32_t>(product);
        if (leftover < bound) {
            const uint32_t threshold = static_cast<uint32_t>((UINT32_MAX - (bound - 1)) % bound);
            while (leftover < threshold) {
                product = static_cast<uint64_t>(next32()) * bound;
                leftover = static_cast<uint32_t>(product);
            }
        }
        return static_cast<uint32_t>(product >> 32);
    }
};

// The LCG `steps` steps ahead is multiplier * state + increment (Brown's jump, as
// numpy's pcg64_advance computes it); steps count modulo 2**128, the LCG's period.
struct Jump {
    u128 multiplier = 1, increment = 0;

    Jump(u128 steps, u128 lcg_increment) {
        u128 step_multiplier = MULTIPLIER, step_increment = lcg_increment;
        for (; steps; steps >>= 1) {
            if (steps & 1) {
                multiplier *= step_multiplier;
                increment = increment * step_multiplier + step_increment;
            }
            step_increment *= step_multiplier + 1;
            step_multiplier *= step_multiplier;
        }
    }
    u128 from(u128 state) const { return multiplier * state + increment; }
};

// -- bootstrap draws --------------------------------------------------------------

// Draws are made a batch at a time and counted after: on ten million segments,
// counting each draw as it is made took several times as long (the random increments
// wait on memory, and the generator's chain on them).
constexpr Py_ssize_t DRAW_BATCH = 4096;

// Whether a row of n counts, each drawn one at a time, holds every count exactly and
// none above `limit`. A uint8 count wraps to 0 past 255, which takes 256 from the row's
// total: a total of n means that no count wrapped, without a test at every draw (which
// took a third of the time).
bool row_fits(const uint8_t* row, Py_ssize_t n, unsigned long limit) {
    uint64_t total = 0;
    uint8_t most = 0;
    for (Py_ssize_t segment = 0; segment < n; ++segment) {
        total += row[segment];
        most = std::max(most, row[segment]);
    }
    return total == static_cast<uint64_t>(n) && most <= limit;
}
bool row_fits(const double*, Py_ssize_t, unsigned long) { return true; }  // a count <= n

// Sets each of `rows` rows of n counts to the counts of one resample's n draws.
// Returns false if a count exceeds `limit` (uint8's largest value, or less), which
// leaves that count wrong; the draws go on to the end, so that the generator's state is
// right either way.
template <class Out>
bool count_rows(Pcg64& state, Py_ssize_t n, Out* counts, Py_ssize_t rows, unsigned long limit) {
    const uint32_t bound = static_cast<uint32_t>(n);
    uint32_t drawn[DRAW_BATCH];
    Pcg64 generator = state;  // a copy the compiler keeps in registers: `drawn` cannot alias it
    bool fits = true;
    for (Py_ssize_t row = 0; row < rows; ++row) {
        Out* own = counts + row * n;
        std::fill(own, own + n, Out(0));
        for (Py_ssize_t done = 0; done < n; done += DRAW_BATCH) {
            const Py_ssize_t size = std::min(DRAW_BATCH, n - done);
            for (Py_ssize_t draw = 0; draw < size; ++draw) drawn[draw] = generator.below(bound);
            for (Py_ssize_t draw = 0; draw < size; ++draw) ++own[drawn[draw]];
        }
        fits &= row_fits(own, n, limit);
    }
    state = generator;
    return fits;
}

PyObject* draw_counts(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"state_high", "state_low", "inc_high", "inc_low",
                                     "has_uint32", "uinteger", "n", "out", "limit", nullptr};
    unsigned long long state_high, state_low, inc_high, inc_low, uinteger;
    int has_uint32;
    Py_ssize_t n;
    PyObject* out;
    unsigned long limit = UINT8_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KKKKpKnO|k:draw_counts",
                                     const_cast<char**>(keywords), &state_high, &state_low,
                                     &inc_high, &inc_low, &has_uint32, &uinteger, &n, &out,
                                     &limit))
        return nullptr;
    if (n < 2 || static_cast<unsigned long long>(n) > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "n must be in [2, 2**32 - 1]");
        return nullptr;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return nullptr;
    const bool doubles = view.itemsize == sizeof(double) && view.format &&
                         std::strcmp(view.format, "d") == 0;
    const bool bytes = view.itemsize == 1 && view.format && std::strcmp(view.format, "B") == 0;
    if (!(doubles || bytes) || view.len % (n * view.itemsize) != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "out must be a C-contiguous float64 or uint8 array "
                                          "of whole rows of n counts");
        return nullptr;
    }
    // A count is at most n, exact in a double; a uint8 holds up to 255.
    limit = doubles ? UINT32_MAX : std::min<unsigned long>(limit, UINT8_MAX);
    const Py_ssize_t rows = view.len / view.itemsize / n;
    Pcg64 generator{make_u128(state_high, state_low), make_u128(inc_high, inc_low),
                    has_uint32 != 0, static_cast<uint32_t>(uinteger)};
    bool fits;
    Py_BEGIN_ALLOW_THREADS
    fits = bytes ? count_rows(generator, n, static_cast<uint8_t*>(view.buf), rows, limit)
                 : count_rows(generator, n, static_cast<double*>(view.buf), rows, limit);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("(KKNKN)", static_cast<unsigned long long>(high_of(generator.state)),
                         static_cast<unsigned long long>(low_of(generator.state)),
                         PyBool_FromLong(generator.has_uint32),
                         static_cast<unsigned long long>(generator.uinteger),
                         PyBool_FromLong(fits));
}

// -- statistics rows, as the sums read them ----------------------------------------

// One system's rows: a 2-D array of uint8 or uint16 whole numbers, any strides.
struct Rows {
    const char* data;
    Py_ssize_t segments, width, row_stride, column_stride;  // strides in bytes
    bool wide;                                                // uint16, else uint8

    unsigned at(Py_ssize_t segment, Py_ssize_t column) const {
        const char* where = data + segment * row_stride + column * column_stride;
        return wide ? *reinterpret_cast<const uint16_t*>(where)
                    : *reinterpret_cast<const uint8_t*>(where);
    }

    // Statistic `column` of segments [start, start + size), into `out`.
    template <class T>
    void column(Py_ssize_t column, Py_ssize_t start, Py_ssize_t size, T* out) const {
        if (wide) {
            copy_column<uint16_t>(column, start, size, out);
        } else {
            copy_column<uint8_t>(column, start, size, out);
        }
    }

  private:
    template <class Stored, class T>
    void copy_column(Py_ssize_t column, Py_ssize_t start, Py_ssize_t size, T* out) const {
        const char* first = data + start * row_stride + column * column_stride;
        if (row_stride == sizeof(Stored)) {  // a column of its own (Fortran order)
            std::copy_n(reinterpret_cast<const Stored*>(first), size, out);
            return;
        }
        for (Py_ssize_t segment = 0; segment < size; ++segment)
            out[segment] = T(*reinterpret_cast<const Stored*>(first + segment * row_stride));
    }
};

// The buffers of a sequence of systems' rows, released on destruction.
class SystemRows {
  public:
    SystemRows() = default;
    SystemRows(const SystemRows&) = delete;
    SystemRows& operator=(const SystemRows&) = delete;
    ~SystemRows() {
        for (Py_buffer& view : views_) PyBuffer_Release(&view);
    }

    // Reads `systems` (a sequence of arrays of n rows each; n < 0: as many as the
    // first has); false with a Python error if one is not a 2-D uint8 or uint16 array
    // of n rows, or there is none.
    bool read(PyObject* systems, Py_ssize_t n) {
        PyObject* sequence = PySequence_Fast(systems, "systems must be a sequence of arrays");
        if (!sequence) return false;
        const Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
        views_.reserve(static_cast<size_t>(count));
        for (Py_ssize_t i = 0; i < count; ++i) {
            views_.emplace_back();
            Py_buffer& view = views_.back();
            if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(sequence, i), &view,
                                   PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
                views_.pop_back();
                Py_DECREF(sequence);
                return false;
            }
            const bool typed = view.format != nullptr;
            const bool narrow = typed && view.itemsize == 1 && std::strcmp(view.format, "B") == 0;
            const bool wide = typed && view.itemsize == 2 && std::strcmp(view.format, "H") == 0;
            if (view.ndim == 2 && n < 0) n = view.shape[0];
            if (view.ndim != 2 || !(narrow || wide) || view.shape[0] != n) {
                Py_DECREF(sequence);
                PyErr_SetString(PyExc_ValueError, "systems must be 2-D uint8 or uint16 arrays of "
                                                  "n rows each");
                return false;
            }
            rows.push_back(Rows{static_cast<const char*>(view.buf), view.shape[0], view.shape[1],
                                view.strides[0], view.strides[1], wide});
            width += view.shape[1];
        }
        Py_DECREF(sequence);
        if (rows.empty()) {
            PyErr_SetString(PyExc_ValueError, "systems must hold at least one array");
            return false;
        }
        segments = n;
        return true;
    }

    // Whether any system holds uint16.
    bool wide() const {
        return std::any_of(rows.begin(), rows.end(), [](const Rows& own) { return own.wide; });
    }

    // Segment `segment`'s statistics, every system's in turn, into `out` (width).
    template <class T>
    void row(Py_ssize_t segment, T* out) const {
        for (const Rows& own : rows)
            for (Py_ssize_t column = 0; column < own.width; ++column)
                *out++ = T(own.at(segment, column));
    }

    std::vector<Rows> rows;
    Py_ssize_t segments = 0, width = 0;

  private:
    std::vector<Py_buffer> views_;
};

// A writable C-contiguous int64 array of `rows` x `width` (rows < 0: as many as it
// holds, set), or a Python error.
bool sums_buffer(PyObject* out, Py_ssize_t& rows, Py_ssize_t width, Py_buffer& view) {
    if (PyObject_GetBuffer(out, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return false;
    const bool whole = view.itemsize == 8 && view.format &&
                       (std::strcmp(view.format, "q") == 0 || std::strcmp(view.format, "l") == 0);
    if (rows < 0 && width > 0) rows = view.len / 8 / width;
    if (!whole || view.len != rows * width * 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "out must be a C-contiguous int64 array of one row of "
                                          "sums per resample or trial, a sum per statistic");
        return false;
    }
    return true;
}

// -- bootstrap sums -----------------------------------------------------------------

// Segments per block of the products: the block's statistics, a column at a time, and
// its counts stay in cache while every resample of the chunk reads them.
constexpr Py_ssize_t PRODUCT_BLOCK = 4096;

// One block of `products`: the counts of `resamples` resamples (rows `n` apart, from
// the block's first segment), the block's statistics a column at a time (`width`
// columns, PRODUCT_BLOCK apart), and the sums to add to (a row of `width` per resample).
template <class Column>
struct Block {
    const uint8_t* counts;
    Py_ssize_t n, resamples;
    const Column* columns;
    Py_ssize_t width;
    int64_t* sums;
};

// sums[r][c] += the sum over segments [begin, end) of the block of counts[r][b] *
// columns[c][b], for resamples [r0, resamples) and columns [c0, width). Partial sums
// are taken in 32 bits, over at most 256 segments for uint16 statistics (65535 * 255 *
// 256 < 2**32) and a whole block for uint8 ones.
template <class Column>
IN_CLONES void add_products(const Block<Column>& block, Py_ssize_t r0, Py_ssize_t c0,
                            Py_ssize_t begin, Py_ssize_t end) {
    const Py_ssize_t step = sizeof(Column) == 1 ? PRODUCT_BLOCK : 256;
    for (Py_ssize_t first = begin; first < end; first += step) {
        const Py_ssize_t last = std::min(end, first + step);
        for (Py_ssize_t r = r0; r < block.resamples; ++r) {
            const uint8_t* count = block.counts + r * block.n;
            for (Py_ssize_t c = c0; c < block.width; ++c) {
                const Column* column = block.columns + c * PRODUCT_BLOCK;
                uint32_t sum = 0;
                for (Py_ssize_t b = first; b < last; ++b)
                    sum += uint32_t(count[b]) * uint32_t(column[b]);
                block.sums[r * block.width + c] += sum;
            }
        }
    }
}

VECTOR_CLONES void add_products_narrow(const Block<uint8_t>& block, Py_ssize_t r0,
                                       Py_ssize_t c0, Py_ssize_t begin, Py_ssize_t end) {
    add_products(block, r0, c0, begin, end);
}

VECTOR_CLONES void add_products_wide(const Block<uint16_t>& block, Py_ssize_t r0,
                                     Py_ssize_t c0, Py_ssize_t begin, Py_ssize_t end) {
    add_products(block, r0, c0, begin, end);
}

#if EVALPROTO_X86
// add_products of uint8 statistics over the block's first `size` segments (a multiple
// of 64), for the first resamples and columns in fours, with AVX-512 VNNI's dot
// products of 64 bytes: several times as fast. The counts are taken as signed bytes:
// every count must be below 128.
__attribute__((target("avx512f,avx512bw,avx512vnni")))
void add_products_vnni(const Block<uint8_t>& block, Py_ssize_t size) {
    for (Py_ssize_t r = 0; r + 4 <= block.resamples; r += 4) {
        for (Py_ssize_t c = 0; c + 4 <= block.width; c += 4) {
            __m512i total[4][4];
            for (auto& line : total)
                for (__m512i& cell : line) cell = _mm512_setzero_si512();
            for (Py_ssize_t b = 0; b < size; b += 64) {
                __m512i count[4], column[4];
                for (int q = 0; q < 4; ++q) {
                    count[q] = _mm512_loadu_si512(block.counts + (r + q) * block.n + b);
                    column[q] = _mm512_loadu_si512(block.columns + (c + q) * PRODUCT_BLOCK + b);
                }
                for (int i = 0; i < 4; ++i)
                    for (int j = 0; j < 4; ++j)
                        total[i][j] = _mm512_dpbusd_epi32(total[i][j], column[j], count[i]);
            }
            alignas(64) int32_t lanes[16];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) {
                    _mm512_store_si512(lanes, total[i][j]);
                    uint32_t sum = 0;
                    for (int32_t lane : lanes) sum += static_cast<uint32_t>(lane);
                    block.sums[(r + i) * block.width + c + j] += sum;
                }
        }
    }
}

bool has_vnni() {
    static const bool found = __builtin_cpu_supports("avx512vnni") &&
                              __builtin_cpu_supports("avx512bw");
    return found;
}
#endif

// Whether every count of the block's resamples, over `size` segments, is below 128.
bool small_counts(const uint8_t* counts, Py_ssize_t n, Py_ssize_t resamples, Py_ssize_t size) {
    uint8_t seen = 0;
    for (Py_ssize_t r = 0; r < resamples; ++r)
        for (Py_ssize_t b = 0; b < size; ++b) seen |= counts[r * n + b];
    return seen < 128;
}

// One block's sums: with VNNI where it applies (uint8, small counts), the rest (the
// last resamples and columns short of four, the last segments short of 64) and
// everything else by add_products.
void block_sums(const Block<uint8_t>& block, Py_ssize_t size, bool vnni) {
#if EVALPROTO_X86
    const Py_ssize_t whole = size / 64 * 64;
    if (vnni && whole && has_vnni() &&
        small_counts(block.counts, block.n, block.resamples, whole)) {
        add_products_vnni(block, whole);
        const Py_ssize_t resamples = block.resamples / 4 * 4, width = block.width / 4 * 4;
        add_products_narrow(Block<uint8_t>{block.counts, block.n, resamples, block.columns,
                                           block.width, block.sums}, 0, width, 0, whole);
        add_products_narrow(block, resamples, 0, 0, whole);
        add_products_narrow(block, 0, 0, whole, size);
        return;
    }
#endif
    (void)vnni;
    add_products_narrow(block, 0, 0, 0, size);
}

void block_sums(const Block<uint16_t>& block, Py_ssize_t size, bool) {
    add_products_wide(block, 0, 0, 0, size);
}

// sums += counts @ rows, block after block of segments: each block's statistics copied
// a column at a time (as Column) for every resample to read.
template <class Column>
void products_of(const uint8_t* counts, Py_ssize_t n, Py_ssize_t resamples,
                 const SystemRows& systems, int64_t* sums, bool vnni) {
    std::vector<Column> columns(static_cast<size_t>(systems.width * PRODUCT_BLOCK));
    for (Py_ssize_t start = 0; start < n; start += PRODUCT_BLOCK) {
        const Py_ssize_t size = std::min(PRODUCT_BLOCK, n - start);
        Column* column = columns.data();
        for (const Rows& own : systems.rows)
            for (Py_ssize_t c = 0; c < own.width; ++c, column += PRODUCT_BLOCK)
                own.column(c, start, size, column);
        block_sums(Block<Column>{counts + start, n, resamples, columns.data(), systems.width, sums},
                   size, vnni);
    }
}

PyObject* products(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"counts", "systems", "out", "vnni", nullptr};
    PyObject *counts_object, *systems_object, *out;
    int vnni = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|p:products", const_cast<char**>(keywords),
                                     &counts_object, &systems_object, &out, &vnni))
        return nullptr;
    Py_buffer counts;
    if (PyObject_GetBuffer(counts_object, &counts, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return nullptr;
    if (counts.ndim != 2 || counts.itemsize != 1 || !counts.format ||
        std::strcmp(counts.format, "B") != 0) {
        PyBuffer_Release(&counts);
        PyErr_SetString(PyExc_ValueError, "counts must be a C-contiguous 2-D uint8 array");
        return nullptr;
    }
    Py_ssize_t resamples = counts.shape[0];
    const Py_ssize_t n = counts.shape[1];
    SystemRows systems;
    Py_buffer sums;
    if (!systems.read(systems_object, n) || !sums_buffer(out, resamples, systems.width, sums)) {
        PyBuffer_Release(&counts);
        return nullptr;
    }
    const bool wide = systems.wide();
    bool failed = false;
    Py_BEGIN_ALLOW_THREADS
    try {
        const uint8_t* drawn = static_cast<const uint8_t*>(counts.buf);
        int64_t* into = static_cast<int64_t*>(sums.buf);
        if (wide) {
            products_of<uint16_t>(drawn, n, resamples, systems, into, false);
        } else {
            products_of<uint8_t>(drawn, n, resamples, systems, into, vnni != 0);
        }
    } catch (const std::bad_alloc&) {
        failed = true;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sums);
    PyBuffer_Release(&counts);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

// -- approximate randomization --------------------------------------------------------

// Segments per range: a range's tables (256 sums of every subset of 8 segments' rows,
// for each 8 of the range) stay in a core's cache while every trial reads them.
constexpr Py_ssize_t RANGE = 128;
constexpr Py_ssize_t RANGE_BLOCKS = RANGE / 8;
// 64-bit outputs that hold a range's bits wherever they start in the first one.
constexpr int RANGE_OUTPUTS = RANGE / 64 + 1;
// The partial sums of a trial: the statistics' width, rounded up to whole vectors.
constexpr Py_ssize_t LANES = 32;
inline Py_ssize_t padded(Py_ssize_t width) { return (width + LANES - 1) / LANES * LANES; }

// 64 bytes of table entries, added as one: GCC's and clang's vector extension, which each
// clone compiles for its own registers (one AVX-512 register, two AVX2 ones, ...).
template <class Entry>
struct Lanes {
    static constexpr int COUNT = 64 / sizeof(Entry);
#if defined(__GNUC__)
    // Aligned as an Entry, so that no load or store needs more (std::vector gives no more).
    typedef Entry Vector __attribute__((vector_size(64), aligned(sizeof(Entry))));
    Vector v;
    void add(const Lanes& other) { v += other.v; }
    void set(const Lanes& a, const Lanes& b) { v = a.v + b.v; }
#else
    Entry v[COUNT];
    void add(const Lanes& other) {
        for (int i = 0; i < COUNT; ++i) v[i] += other.v[i];
    }
    void set(const Lanes& a, const Lanes& b) {
        for (int i = 0; i < COUNT; ++i) v[i] = a.v[i] + b.v[i];
    }
#endif
};

// One range's tables: for each block of 8 segments, 256 rows of `vectors` Lanes. Entries
// are uint16 when every statistic is uint8 (a range's sum of 16 entries is at most 16 *
// 8 * 255 < 65536), else uint32.
template <class Entry>
struct RangeTables {
    Py_ssize_t vectors;  // Lanes per table row
    std::vector<Lanes<Entry>> tables;
    std::vector<Lanes<Entry>> rows;  // the 8 rows of a block

    explicit RangeTables(Py_ssize_t width)
        : vectors((width + Lanes<Entry>::COUNT - 1) / Lanes<Entry>::COUNT),
          tables(static_cast<size_t>(RANGE_BLOCKS * 256 * vectors)),
          rows(static_cast<size_t>(8 * vectors)) {}
};

// The tables of segments [start, start + RANGE) (those at or past `end` count as
// zero rows): table[block][m] is the sum of the rows of the block's segments whose
// bits are set in m, each the sum of a smaller one and a row.
template <class Entry>
IN_CLONES void build_tables(RangeTables<Entry>& own, const SystemRows& systems, Py_ssize_t start,
                            Py_ssize_t end) {
    const Py_ssize_t vectors = own.vectors;
    for (Py_ssize_t block = 0; block < RANGE_BLOCKS; ++block) {
        std::fill(own.rows.begin(), own.rows.end(), Lanes<Entry>{});
        for (int b = 0; b < 8; ++b) {
            const Py_ssize_t segment = start + block * 8 + b;
            if (segment < end)
                systems.row(segment, reinterpret_cast<Entry*>(own.rows.data() + b * vectors));
        }
        Lanes<Entry>* table = own.tables.data() + block * 256 * vectors;
        std::fill(table, table + vectors, Lanes<Entry>{});
        for (int m = 1; m < 256; ++m) {
            const Lanes<Entry>* without = table + (m & (m - 1)) * vectors;
            const int lowest = __builtin_ctz(static_cast<unsigned>(m));  // the segment m adds
            const Lanes<Entry>* row = own.rows.data() + lowest * vectors;
            for (Py_ssize_t v = 0; v < vectors; ++v) table[m * vectors + v].set(without[v], row[v]);
        }
    }
}

// Adds one trial's sums over the range to `row`: the table entry of each block's 8 bits
// of `bits` (the range's first bit at bit 0 of bits[0]), added up in registers.
template <class Entry>
IN_CLONES void add_trial(const RangeTables<Entry>& own, const uint64_t* bits,
                         uint64_t* __restrict row) {
    const Py_ssize_t vectors = own.vectors;
    const Lanes<Entry>* entries[RANGE_BLOCKS];
    for (Py_ssize_t block = 0; block < RANGE_BLOCKS; ++block) {
        const unsigned byte = static_cast<unsigned>(bits[block / 8] >> (8 * (block % 8))) & 255;
        entries[block] = own.tables.data() + (block * 256 + byte) * vectors;
    }
    for (Py_ssize_t v = 0; v < vectors; ++v) {
        Lanes<Entry> sum{};
        for (const Lanes<Entry>* entry : entries) sum.add(entry[v]);
        uint64_t* own_row = row + v * Lanes<Entry>::COUNT;
        for (int lane = 0; lane < Lanes<Entry>::COUNT; ++lane) own_row[lane] += sum.v[lane];
    }
}

struct Stream {
    u128 state, increment;
    Py_ssize_t n;
};

// The swapped sums of trials [first, first + trials) over segments [begin, end), added
// to sums (a row of padded(width) per trial).
template <class Entry>
IN_CLONES void add_swapped(const Stream& stream, const SystemRows& systems, Py_ssize_t first,
                           Py_ssize_t trials, Py_ssize_t begin, Py_ssize_t end, uint64_t* sums) {
    const Py_ssize_t n = stream.n;
    RangeTables<Entry> own(systems.width);
    // From one trial's outputs for a range to the next trial's: the stream moves on n
    // bits, whole outputs' worth (n / 64) or one more.
    const u128 steps = static_cast<u128>(n / 64) - RANGE_OUTPUTS;
    const Jump next(steps, stream.increment), next_and_one(steps + 1, stream.increment);
    for (Py_ssize_t start = begin; start < end; start += RANGE) {
        build_tables(own, systems, start, std::min(end, start + RANGE));
        u128 position = static_cast<u128>(first) * n + start;  // the bit of trial `first`
        Pcg64 generator{Jump(position >> 6, stream.increment).from(stream.state), stream.increment,
                        false, 0};
        for (Py_ssize_t t = 0; t < trials; ++t) {
            uint64_t outputs[RANGE_OUTPUTS + 1], bits[RANGE_OUTPUTS];
            for (int o = 0; o < RANGE_OUTPUTS; ++o) outputs[o] = generator.next64();
            outputs[RANGE_OUTPUTS] = 0;
            const unsigned shift = static_cast<unsigned>(position & 63);
            for (int o = 0; o < RANGE_OUTPUTS; ++o)
                bits[o] = shift ? (outputs[o] >> shift) | (outputs[o + 1] << (64 - shift))
                                : outputs[o];
            add_trial(own, bits, sums + t * padded(systems.width));
            const u128 following = position + n;
            generator.state = ((following >> 6) - (position >> 6) == static_cast<u128>(n / 64)
                                   ? next : next_and_one).from(generator.state);
            position = following;
        }
    }
}

VECTOR_CLONES void add_swapped_narrow(const Stream& stream, const SystemRows& systems,
                                      Py_ssize_t first, Py_ssize_t trials, Py_ssize_t begin,
                                      Py_ssize_t end, uint64_t* sums) {
    add_swapped<uint16_t>(stream, systems, first, trials, begin, end, sums);
}

VECTOR_CLONES void add_swapped_wide(const Stream& stream, const SystemRows& systems,
                                    Py_ssize_t first, Py_ssize_t trials, Py_ssize_t begin,
                                    Py_ssize_t end, uint64_t* sums) {
    add_swapped<uint32_t>(stream, systems, first, trials, begin, end, sums);
}

PyObject* randomization_sums(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"state_high", "state_low", "inc_high", "inc_low",
                                     "first", "systems", "out", "threads", nullptr};
    unsigned long long state_high, state_low, inc_high, inc_low;
    Py_ssize_t first, threads = 1;
    PyObject *systems_object, *out;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KKKKnOO|n:randomization_sums",
                                     const_cast<char**>(keywords), &state_high, &state_low,
                                     &inc_high, &inc_low, &first, &systems_object, &out, &threads))
        return nullptr;
    if (first < 0 || threads < 1) {
        PyErr_SetString(PyExc_ValueError, "first must be >= 0 and threads >= 1");
        return nullptr;
    }
    SystemRows systems;
    if (!systems.read(systems_object, -1)) return nullptr;
    const Py_ssize_t n = systems.segments;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "systems must have rows");
        return nullptr;
    }
    Py_ssize_t trials = -1;
    Py_buffer sums;
    if (!sums_buffer(out, trials, systems.width, sums)) return nullptr;
    const Stream stream{make_u128(state_high, state_low), make_u128(inc_high, inc_low), n};
    const bool wide = systems.wide();
    // Each thread sums its own ranges of segments into its own rows, added up after.
    const Py_ssize_t parts = std::max<Py_ssize_t>(1, std::min(threads, (n + RANGE - 1) / RANGE));
    std::vector<std::vector<uint64_t>> partial;
    bool failed = false;
    Py_BEGIN_ALLOW_THREADS
    try {
        const Py_ssize_t stride = padded(systems.width);
        partial.assign(static_cast<size_t>(parts),
                       std::vector<uint64_t>(static_cast<size_t>(trials * stride), 0));
        auto run_part = [&](Py_ssize_t part) {
            const Py_ssize_t ranges = (n + RANGE - 1) / RANGE;
            const Py_ssize_t begin = ranges * part / parts * RANGE;
            const Py_ssize_t end = std::min(n, ranges * (part + 1) / parts * RANGE);
            (wide ? add_swapped_wide : add_swapped_narrow)(stream, systems, first, trials, begin,
                                                           end, partial[part].data());
        };
        std::vector<std::thread> helpers;
        try {
            for (Py_ssize_t part = 1; part < parts; ++part) helpers.emplace_back(run_part, part);
        } catch (const std::system_error&) {
            const Py_ssize_t started = static_cast<Py_ssize_t>(helpers.size());
            for (Py_ssize_t part = started + 1; part < parts; ++part) run_part(part);
        }
        run_part(0);
        for (std::thread& helper : helpers) helper.join();
        int64_t* into = static_cast<int64_t*>(sums.buf);
        for (Py_ssize_t t = 0; t < trials; ++t)
            for (Py_ssize_t w = 0; w < systems.width; ++w) {
                uint64_t total = 0;
                for (const auto& own : partial) total += own[t * stride + w];
                into[t * systems.width + w] = static_cast<int64_t>(total);
            }
    } catch (const std::bad_alloc&) {
        failed = true;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sums);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"draw_counts", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(draw_counts)),
     METH_VARARGS | METH_KEYWORDS,
     "draw_counts(state_high, state_low, inc_high, inc_low, has_uint32, uinteger, n, out,\n"
     "            limit=255) -> (state_high, state_low, has_uint32, uinteger, fits)\n\n"
     "Sets each row of `out` (float64 or uint8, rows of n) to how often each of n segments\n"
     "is drawn by Generator.integers(0, n, n) from the given PCG64 state, and returns the\n"
     "state after the draws, and whether every count fit: in uint8, at most `limit`."},
    {"products", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(products)),
     METH_VARARGS | METH_KEYWORDS,
     "products(counts, systems, out, vnni=True) -> None\n\n"
     "Adds counts @ rows, the systems' rows side by side, to `out` (int64, a row per\n"
     "resample): counts is a (k, n) uint8 array, systems a sequence of (n, d) uint8 or\n"
     "uint16 arrays. `vnni=False` leaves out the AVX-512 VNNI path (for tests)."},
    {"randomization_sums",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(randomization_sums)),
     METH_VARARGS | METH_KEYWORDS,
     "randomization_sums(state_high, state_low, inc_high, inc_low, first, systems, out,\n"
     "                   threads=1) -> None\n\n"
     "Sets `out` (int64, a row per trial) to each trial's sums of the swapped rows, the\n"
     "systems' side by side, for trials first, first + 1, ...: segment s is swapped in\n"
     "trial t where bit t * n + s of Generator.integers(2, (T, n), dtype=bool) from the\n"
     "given fresh PCG64 state is set. systems: (n, d) uint8 or uint16 arrays."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.stats._resample",
                      "Bootstrap and approximate randomization sums from numpy's random stream "
                      "(see native/resample.cpp).",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__resample(void) { return PyModule_Create(&module); }
