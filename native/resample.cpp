// evalproto.stats._resample: bootstrap draw counts from numpy's own random stream.
//
// sacrebleu draws a bootstrap resample with numpy.random.default_rng(seed).choice(n,
// (N, n)), which is Generator.integers(0, n): numpy's PCG64 bit generator (a 128-bit
// LCG with the XSL-RR output), each 64-bit output split into two 32-bit draws (the
// low half first, the high half kept in the generator's state), and Lemire's
// multiply-and-reject to bring a 32-bit draw into [0, n). This kernel runs those same
// steps and counts how often each segment is drawn, without the n int64 picks that
// numpy would write and bincount would read: on a million segments, drawing and
// counting is several times faster, and needs no memory beyond the counts.
// tests/test_resample_kernel.py checks counts and the state after them against numpy.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

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

// Sets each of `rows` rows of n = scratch.size() counts to the counts of one
// resample's n draws. Returns false if a count exceeds `limit` (the output type's
// largest value), which leaves that count wrong; the draws go on to the end, so that
// the generator's state is right either way.
template <class Count, class Out>
bool count_rows(Pcg64& generator, std::vector<Count>& scratch, Out* counts, Py_ssize_t rows,
                unsigned long limit) {
    const Py_ssize_t n = static_cast<Py_ssize_t>(scratch.size());
    const uint32_t bound = static_cast<uint32_t>(n);
    bool fits = true;
    for (Py_ssize_t row = 0; row < rows; ++row) {
        for (Py_ssize_t draw = 0; draw < n; ++draw) ++scratch[generator.below(bound)];
        Out* own = counts + row * n;
        for (Py_ssize_t segment = 0; segment < n; ++segment) {
            fits &= scratch[segment] <= limit;
            own[segment] = static_cast<Out>(scratch[segment]);
            scratch[segment] = 0;
        }
    }
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
    // Counted in the narrowest integers that hold a count (one segment is drawn at
    // most n times in a resample of n): on a million segments, a quarter or half the
    // memory that random increments touch, so more of it stays in cache. Written out
    // row by row.
    std::vector<uint16_t> narrow;
    std::vector<uint32_t> wide;
    try {
        if (n <= UINT16_MAX) {
            narrow.assign(static_cast<size_t>(n), 0);
        } else {
            wide.assign(static_cast<size_t>(n), 0);
        }
    } catch (const std::bad_alloc&) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    bool fits;
    Py_BEGIN_ALLOW_THREADS
    if (bytes) {
        uint8_t* counts = static_cast<uint8_t*>(view.buf);
        fits = n <= UINT16_MAX ? count_rows(generator, narrow, counts, rows, limit)
                               : count_rows(generator, wide, counts, rows, limit);
    } else {
        double* counts = static_cast<double*>(view.buf);
        fits = n <= UINT16_MAX ? count_rows(generator, narrow, counts, rows, limit)
                               : count_rows(generator, wide, counts, rows, limit);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("(KKNKN)", static_cast<unsigned long long>(high_of(generator.state)),
                         static_cast<unsigned long long>(low_of(generator.state)),
                         PyBool_FromLong(generator.has_uint32),
                         static_cast<unsigned long long>(generator.uinteger),
                         PyBool_FromLong(fits));
}

PyMethodDef methods[] = {
    {"draw_counts", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(draw_counts)),
     METH_VARARGS | METH_KEYWORDS,
     "draw_counts(state_high, state_low, inc_high, inc_low, has_uint32, uinteger, n, out,\n"
     "            limit=255) -> (state_high, state_low, has_uint32, uinteger, fits)\n\n"
     "Sets each row of `out` (float64 or uint8, rows of n) to how often each of n segments\n"
     "is drawn by Generator.integers(0, n, n) from the given PCG64 state, and returns the\n"
     "state after the draws, and whether every count fit: in uint8, at most `limit`."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.stats._resample",
                      "Bootstrap draw counts from numpy's random stream (see native/resample.cpp).",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__resample(void) { return PyModule_Create(&module); }
