// evalproto.stats._kendall: the pair counts behind every Kendall-style statistic of
// meta-evaluation (tau b and c, tau_23 and acc_23 with a tie threshold, WMT's
// Kendall-like, pairwise accuracy), for many rows of many resamples at once.
//
// A row holds n cells, each a metric score x and a human score y. Of its n(n-1)/2 pairs,
// a pair is a metric tie if |x_i - x_j| <= epsilon and a human tie if y_i == y_j or
// |y_i - y_j| < threshold (threshold 0: equal scores only); the differences are rounded
// as Python rounds x_i - x_j, which is what mt-metrics-eval compares. Each row gives
// seven counts: concordant, discordant, metric ties only, human ties only, ties in both,
// and the distinct metric and human scores (for tau c).
//
// A short row is counted pair by pair. A long one in O(n log n): its cells in the order
// of their human scores, the pairs of a cell with those before it split into a prefix
// that is clearly lower (not a human tie: the tie relation with a threshold is a window
// that slides forward) and the window of human ties; two Fenwick trees over the ranks
// of the metric scores count, in each part, the metric scores clearly below, tied and
// clearly above. tests/test_metaeval_kernel.py checks both against the pure-Python
// reference (evalproto.stats.correlation) on random and real rows.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <numeric>
#include <system_error>
#include <thread>
#include <vector>

namespace {

constexpr int COUNTS = 7;
enum { CONCORDANT, DISCORDANT, METRIC_TIES, HUMAN_TIES, BOTH_TIES, METRIC_VALUES, HUMAN_VALUES };

// Rows up to this long are counted pair by pair.
constexpr Py_ssize_t SHORT_ROW = 48;

struct Ties {
    double epsilon, threshold;
    bool metric(double difference) const { return std::fabs(difference) <= epsilon; }
    // `difference` >= 0: a higher human score minus a lower one.
    bool human(double difference) const {
        return threshold > 0 ? difference < threshold : difference <= 0;
    }
};

Py_ssize_t distinct(std::vector<double>& values) {
    std::sort(values.begin(), values.end());
    return std::unique(values.begin(), values.end()) - values.begin();
}

void count_short(const double* x, const double* y, Py_ssize_t n, const Ties& ties,
                 int64_t* out) {
    int64_t counts[5] = {0, 0, 0, 0, 0};
    bool metric_seen[SHORT_ROW] = {}, human_seen[SHORT_ROW] = {};  // an equal score before
    for (Py_ssize_t i = 0; i < n; ++i) {
        for (Py_ssize_t j = i + 1; j < n; ++j) {
            const double dx = x[i] - x[j], dy = y[i] - y[j];
            metric_seen[j] |= dx == 0;
            human_seen[j] |= dy == 0;
            const bool metric_tie = ties.metric(dx), human_tie = ties.human(std::fabs(dy));
            if (metric_tie && human_tie) ++counts[BOTH_TIES];
            else if (metric_tie) ++counts[METRIC_TIES];
            else if (human_tie) ++counts[HUMAN_TIES];
            else if ((dx > 0) == (dy > 0)) ++counts[CONCORDANT];
            else ++counts[DISCORDANT];
        }
    }
    std::copy_n(counts, 5, out);
    out[METRIC_VALUES] = n - std::count(metric_seen, metric_seen + n, true);
    out[HUMAN_VALUES] = n - std::count(human_seen, human_seen + n, true);
}

struct Fenwick {
    std::vector<int64_t> tree;
    void reset(size_t size) { tree.assign(size + 1, 0); }
    void add(size_t rank) {
        for (size_t at = rank + 1; at < tree.size(); at += at & (~at + 1)) ++tree[at];
    }
    // How many ranks below `end` were added.
    int64_t below(size_t end) const {
        int64_t total = 0;
        for (size_t at = end; at > 0; at &= at - 1) total += tree[at];
        return total;
    }
};

struct LongRow {
    std::vector<Py_ssize_t> order;
    std::vector<double> values;  // the distinct metric scores, ascending
    std::vector<size_t> rank, low, high;
    Fenwick lower, before;  // cells clearly lower in human score; all cells before

    void count(const double* x, const double* y, Py_ssize_t n, const Ties& ties, int64_t* out) {
        order.resize(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), Py_ssize_t(0));
        std::stable_sort(order.begin(), order.end(),
                         [y](Py_ssize_t a, Py_ssize_t b) { return y[a] < y[b]; });
        values.assign(x, x + n);
        const Py_ssize_t unique = distinct(values);
        values.resize(static_cast<size_t>(unique));
        rank.resize(static_cast<size_t>(n));
        low.resize(static_cast<size_t>(n));
        high.resize(static_cast<size_t>(n));
        for (Py_ssize_t cell = 0; cell < n; ++cell) {
            const double own = x[cell];
            rank[cell] = static_cast<size_t>(
                std::lower_bound(values.begin(), values.end(), own) - values.begin());
            // values[0, low) are clearly below, values[high, ...) clearly above
            low[cell] = static_cast<size_t>(std::partition_point(
                values.begin(), values.end(),
                [&](double value) { return own - value > ties.epsilon; }) - values.begin());
            high[cell] = static_cast<size_t>(std::partition_point(
                values.begin(), values.end(),
                [&](double value) { return value - own <= ties.epsilon; }) - values.begin());
        }
        lower.reset(values.size());
        before.reset(values.size());
        int64_t counts[5] = {0, 0, 0, 0, 0};
        int64_t human_values = 0;
        Py_ssize_t first_tied = 0;  // order[first_tied, position) are human ties of the cell
        for (Py_ssize_t position = 0; position < n; ++position) {
            const Py_ssize_t cell = order[position];
            while (first_tied < position && !ties.human(y[cell] - y[order[first_tied]]))
                lower.add(rank[order[first_tied++]]);
            if (position == 0 || y[order[position - 1]] != y[cell]) ++human_values;
            const int64_t clearly_lower = first_tied, tied = position - first_tied;
            const int64_t below = lower.below(low[cell]);
            const int64_t above = clearly_lower - lower.below(high[cell]);
            counts[CONCORDANT] += below;
            counts[DISCORDANT] += above;
            counts[METRIC_TIES] += clearly_lower - below - above;
            const int64_t both = (before.below(high[cell]) - before.below(low[cell])) -
                                 (lower.below(high[cell]) - lower.below(low[cell]));
            counts[BOTH_TIES] += both;
            counts[HUMAN_TIES] += tied - both;
            before.add(rank[cell]);
        }
        std::copy_n(counts, 5, out);
        out[METRIC_VALUES] = unique;
        out[HUMAN_VALUES] = human_values;
    }
};

struct Work {
    const double* metric;
    const double* human;
    const int64_t* starts;
    Py_ssize_t rows, width;
    Ties ties;
    int64_t* out;

    // Rows [begin, end) of all resamples, numbered resample * rows + row.
    void run(Py_ssize_t begin, Py_ssize_t end) const {
        LongRow long_row;
        for (Py_ssize_t task = begin; task < end; ++task) {
            const Py_ssize_t resample = task / rows, row = task % rows;
            const int64_t first = starts[row], n = starts[row + 1] - first;
            const double* x = metric + resample * width + first;
            const double* y = human + first;
            int64_t* into = out + task * COUNTS;
            if (n < 2) {
                std::fill_n(into, COUNTS, int64_t(0));
                into[METRIC_VALUES] = into[HUMAN_VALUES] = n;
            } else if (n <= SHORT_ROW) {
                count_short(x, y, n, ties, into);
            } else {
                long_row.count(x, y, n, ties, into);
            }
        }
    }
};

bool get(PyObject* object, Py_buffer& view, const char* format, bool writable) {
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, &view, flags) < 0) return false;
    const bool whole = std::strcmp(format, "q") == 0;
    const bool fits = view.itemsize == 8 && view.format &&
                      (std::strcmp(view.format, format) == 0 ||
                       (whole && std::strcmp(view.format, "l") == 0));
    if (!fits) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "expected a C-contiguous %s array",
                     whole ? "int64" : "float64");
        return false;
    }
    return true;
}

PyObject* pair_counts(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"metric", "human", "starts", "epsilon", "threshold", "out",
                                     "threads", nullptr};
    PyObject *metric_object, *human_object, *starts_object, *out_object;
    double epsilon, threshold;
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOddO|n:pair_counts",
                                     const_cast<char**>(keywords), &metric_object, &human_object,
                                     &starts_object, &epsilon, &threshold, &out_object, &threads))
        return nullptr;
    if (!(epsilon >= 0) || !(threshold >= 0) || threads < 1) {
        PyErr_SetString(PyExc_ValueError, "epsilon and threshold must be >= 0, threads >= 1");
        return nullptr;
    }
    Py_buffer metric, human, starts, out;
    if (!get(metric_object, metric, "d", false)) return nullptr;
    if (!get(human_object, human, "d", false)) {
        PyBuffer_Release(&metric);
        return nullptr;
    }
    if (!get(starts_object, starts, "q", false)) {
        PyBuffer_Release(&metric);
        PyBuffer_Release(&human);
        return nullptr;
    }
    if (!get(out_object, out, "q", true)) {
        PyBuffer_Release(&metric);
        PyBuffer_Release(&human);
        PyBuffer_Release(&starts);
        return nullptr;
    }
    const Py_ssize_t width = human.len / 8, rows = starts.len / 8 - 1;
    const int64_t* bounds = static_cast<const int64_t*>(starts.buf);
    bool valid = rows >= 0 && width > 0 && metric.len % (width * 8) == 0 && bounds[0] == 0 &&
                 bounds[rows] == width;
    for (Py_ssize_t row = 0; valid && row < rows; ++row) valid = bounds[row] <= bounds[row + 1];
    const Py_ssize_t resamples = valid ? metric.len / 8 / width : 0;
    valid = valid && out.len == resamples * rows * COUNTS * 8;
    // NaN would break the sorts' ordering: every score must be a number.
    const double* metric_values = static_cast<const double*>(metric.buf);
    const double* human_values = static_cast<const double*>(human.buf);
    for (Py_ssize_t at = 0; valid && at < resamples * width; ++at)
        valid = std::isfinite(metric_values[at]);
    for (Py_ssize_t at = 0; valid && at < width; ++at) valid = std::isfinite(human_values[at]);
    if (!valid) {
        PyBuffer_Release(&metric);
        PyBuffer_Release(&human);
        PyBuffer_Release(&starts);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError,
                        "pair_counts takes finite scores metric (k, n) and human (n), starts "
                        "(rows + 1, from 0 to n, ascending) and out (k, rows, 7)");
        return nullptr;
    }
    const Work work{static_cast<const double*>(metric.buf), static_cast<const double*>(human.buf),
                    bounds, rows, width, Ties{epsilon, threshold}, static_cast<int64_t*>(out.buf)};
    const Py_ssize_t tasks = resamples * rows;
    const Py_ssize_t parts = std::max<Py_ssize_t>(1, std::min(threads, tasks));
    bool failed = false;
    Py_BEGIN_ALLOW_THREADS
    try {
        auto run_part = [&](Py_ssize_t part) {
            work.run(tasks * part / parts, tasks * (part + 1) / parts);
        };
        std::vector<std::thread> helpers;
        try {
            for (Py_ssize_t part = 1; part < parts; ++part) helpers.emplace_back(run_part, part);
        } catch (const std::system_error&) {
            for (Py_ssize_t part = static_cast<Py_ssize_t>(helpers.size()) + 1; part < parts;
                 ++part)
                run_part(part);
        }
        run_part(0);
        for (std::thread& helper : helpers) helper.join();
    } catch (const std::bad_alloc&) {
        failed = true;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&metric);
    PyBuffer_Release(&human);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&out);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"pair_counts", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(pair_counts)),
     METH_VARARGS | METH_KEYWORDS,
     "pair_counts(metric, human, starts, epsilon, threshold, out, threads=1) -> None\n\n"
     "Sets out[k, r] (int64, 7 counts) to the pair counts of row r of resample k: the cells\n"
     "starts[r]:starts[r + 1] of metric[k] (float64, (k, n)) against those of human (n):\n"
     "concordant, discordant, metric ties only, human ties only, both, and the distinct\n"
     "metric and human scores. A metric tie is |difference| <= epsilon, a human tie an\n"
     "equal score or |difference| < threshold."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.stats._kendall",
                      "Pair counts of Kendall-style statistics (see native/kendall.cpp).", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__kendall(void) { return PyModule_Create(&module); }
