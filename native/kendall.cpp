// evalproto.stats._kendall: the pair counts behind every Kendall-style statistic of
// meta-evaluation (tau b and c, tau_23 and acc_23 with a tie threshold, WMT's
// Kendall-like, pairwise accuracy), for many rows of many resamples at once.
//
// A row holds n cells, each a metric score x and a human score y. Of its n(n-1)/2 pairs,
// a pair is a metric tie if |x_i - x_j| <= epsilon and a human tie if y_i == y_j or
// |y_i - y_j| < threshold (threshold 0: equal scores only); the differences are rounded
// as Python rounds x_i - x_j, which is what mt-metrics-eval compares. Each row gives
// seven counts: concordant, discordant, metric ties only, human ties only, ties in both,
// and the distinct metric and human scores (for tau c; the metric's only if asked, in a
// short row).
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

// A short row's human side, the same in every resample: for each pair (i < j, i
// first), -1, 0 or 1 as y_i is clearly below, tied with or clearly above y_j, and the
// distinct human scores.
struct ShortHuman {
    int8_t order[SHORT_ROW * (SHORT_ROW - 1) / 2];
    int64_t values;

    void set(const double* y, Py_ssize_t n, const Ties& ties) {
        bool seen[SHORT_ROW] = {};  // an equal score before
        int8_t* pair = order;
        for (Py_ssize_t i = 0; i < n; ++i)
            for (Py_ssize_t j = i + 1; j < n; ++j) {
                const double dy = y[i] - y[j];
                seen[j] |= dy == 0;
                *pair++ = ties.human(std::fabs(dy)) ? 0 : (dy > 0 ? 1 : -1);
            }
        values = n - std::count(seen, seen + n, true);
    }
};

// Counted without a branch on the scores: ties make branches unpredictable.
void count_short(const double* x, const ShortHuman& human, Py_ssize_t n, const Ties& ties,
                 bool distinct, int64_t* out) {
    int64_t con = 0, dis = 0, metric_only = 0, human_only = 0, both = 0;
    const int8_t* pair = human.order;
    for (Py_ssize_t i = 0; i < n; ++i) {
        for (Py_ssize_t j = i + 1; j < n; ++j, ++pair) {
            const double dx = x[i] - x[j];
            const int64_t tie = ties.metric(dx), human_tie = *pair == 0;
            const int64_t sign = (dx > 0) - (dx < 0);
            both += tie & human_tie;
            metric_only += tie & !human_tie;
            human_only += (!tie) & human_tie;
            con += (!tie) & (sign == *pair) & !human_tie;
            dis += (!tie) & (sign != *pair) & !human_tie;
        }
    }
    out[CONCORDANT] = con;
    out[DISCORDANT] = dis;
    out[METRIC_TIES] = metric_only;
    out[HUMAN_TIES] = human_only;
    out[BOTH_TIES] = both;
    out[HUMAN_VALUES] = human.values;
    out[METRIC_VALUES] = 0;
    if (distinct) {
        bool seen[SHORT_ROW] = {};
        for (Py_ssize_t i = 0; i < n; ++i)
            for (Py_ssize_t j = i + 1; j < n; ++j) seen[j] |= x[i] == x[j];
        out[METRIC_VALUES] = n - std::count(seen, seen + n, true);
    }
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
    Py_ssize_t rows, width, resamples;
    Ties ties;
    bool distinct;  // count a short row's distinct metric scores (for tau c)
    int64_t* out;

    // Tasks [begin, end) of row * resamples + resample: a row's resamples one after the
    // other, so that a short row's human side is worked out once.
    void run(Py_ssize_t begin, Py_ssize_t end) const {
        LongRow long_row;
        ShortHuman short_human;
        Py_ssize_t prepared = -1;
        for (Py_ssize_t task = begin; task < end; ++task) {
            const Py_ssize_t row = task / resamples, resample = task % resamples;
            const int64_t first = starts[row], n = starts[row + 1] - first;
            const double* x = metric + resample * width + first;
            const double* y = human + first;
            int64_t* into = out + (resample * rows + row) * COUNTS;
            if (n < 2) {
                std::fill_n(into, COUNTS, int64_t(0));
                into[METRIC_VALUES] = into[HUMAN_VALUES] = n;
            } else if (n <= SHORT_ROW) {
                if (prepared != row) short_human.set(y, n, ties);
                prepared = row;
                count_short(x, short_human, n, ties, distinct, into);
            } else {
                long_row.count(x, y, n, ties, into);
            }
        }
    }
};

// A C-contiguous array of 8-byte items (float64 "d" or int64 "q"), released on
// destruction (with the GIL held: at the end of the call that took it).
class Buffer {
  public:
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() {
        if (held_) PyBuffer_Release(&view_);
    }

    // False, with a Python error, if `object` is no such array.
    bool get(PyObject* object, const char* format, bool writable) {
        const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(object, &view_, flags) < 0) return false;
        held_ = true;
        const bool whole = std::strcmp(format, "q") == 0;
        if (view_.itemsize == 8 && view_.format &&
            (std::strcmp(view_.format, format) == 0 ||
             (whole && std::strcmp(view_.format, "l") == 0)))
            return true;
        PyErr_Format(PyExc_ValueError, "expected a C-contiguous %s array",
                     whole ? "int64" : "float64");
        return false;
    }

    template <class T>
    T* data() const { return static_cast<T*>(view_.buf); }
    Py_ssize_t size() const { return view_.len / 8; }

  private:
    Py_buffer view_{};
    bool held_ = false;
};

PyObject* pair_counts(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"metric", "human", "starts", "epsilon", "threshold", "out",
                                     "threads", "distinct", nullptr};
    PyObject *metric_object, *human_object, *starts_object, *out_object;
    double epsilon, threshold;
    Py_ssize_t threads = 1;
    int distinct = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOddO|np:pair_counts",
                                     const_cast<char**>(keywords), &metric_object, &human_object,
                                     &starts_object, &epsilon, &threshold, &out_object, &threads,
                                     &distinct))
        return nullptr;
    if (!(epsilon >= 0) || !(threshold >= 0) || threads < 1) {
        PyErr_SetString(PyExc_ValueError, "epsilon and threshold must be >= 0, threads >= 1");
        return nullptr;
    }
    Buffer metric, human, starts, out;
    if (!metric.get(metric_object, "d", false) || !human.get(human_object, "d", false) ||
        !starts.get(starts_object, "q", false) || !out.get(out_object, "q", true))
        return nullptr;
    const Py_ssize_t width = human.size(), rows = starts.size() - 1;
    const int64_t* bounds = starts.data<const int64_t>();
    bool valid = rows >= 0 && width > 0 && metric.size() % width == 0 && bounds[0] == 0 &&
                 bounds[rows] == width;
    for (Py_ssize_t row = 0; valid && row < rows; ++row) valid = bounds[row] <= bounds[row + 1];
    const Py_ssize_t resamples = valid ? metric.size() / width : 0;
    valid = valid && out.size() == resamples * rows * COUNTS;
    // NaN would break the sorts' ordering: every score must be a number.
    const double* metric_values = metric.data<const double>();
    const double* human_values = human.data<const double>();
    for (Py_ssize_t at = 0; valid && at < resamples * width; ++at)
        valid = std::isfinite(metric_values[at]);
    for (Py_ssize_t at = 0; valid && at < width; ++at) valid = std::isfinite(human_values[at]);
    if (!valid) {
        PyErr_SetString(PyExc_ValueError,
                        "pair_counts takes finite scores metric (k, n) and human (n), starts "
                        "(rows + 1, from 0 to n, ascending) and out (k, rows, 7)");
        return nullptr;
    }
    const Work work{metric_values, human_values, bounds, rows, width, resamples,
                    Ties{epsilon, threshold}, distinct != 0, out.data<int64_t>()};
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
        } catch (const std::system_error&) {  // no more threads: the rest on this one
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
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"pair_counts", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(pair_counts)),
     METH_VARARGS | METH_KEYWORDS,
     "pair_counts(metric, human, starts, epsilon, threshold, out, threads=1, distinct=True)\n"
     "    -> None\n\n"
     "Sets out[k, r] (int64, 7 counts) to the pair counts of row r of resample k: the cells\n"
     "starts[r]:starts[r + 1] of metric[k] (float64, (k, n)) against those of human (n):\n"
     "concordant, discordant, metric ties only, human ties only, both, and the distinct\n"
     "metric and human scores. A metric tie is |difference| <= epsilon, a human tie an\n"
     "equal score or |difference| < threshold. distinct=False leaves the distinct metric\n"
     "scores of rows of 48 cells or fewer at 0 (only tau c needs them)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.stats._kendall",
                      "Pair counts of Kendall-style statistics (see native/kendall.cpp).", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__kendall(void) { return PyModule_Create(&module); }
