// evalproto.evaluators._native: the Python face of the kernels.
//
// Each function checks and gathers its arguments with the GIL held (a new reference
// to every str it will read, so that nothing it reads can be freed or changed), then
// releases the GIL for the kernel, which touches no Python object, and returns the
// float64 rows as a bytearray that numpy.frombuffer wraps without a copy.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "kernels.hpp"

namespace {

using evalproto::Batch;
using evalproto::TextRef;

// Owned references, dropped with the GIL held when the call ends.
class References {
  public:
    References() = default;
    References(const References&) = delete;
    References& operator=(const References&) = delete;
    ~References() {
        for (PyObject* object : objects_) Py_DECREF(object);
    }
    void keep(PyObject* object) {
        Py_INCREF(object);
        objects_.push_back(object);
    }

  private:
    std::vector<PyObject*> objects_;
};

// Where an argument is, for error messages: a name and up to three indices
// ("refs[3][0][2]"), spelled out only when there is an error to report.
struct Where {
    const char* name;
    Py_ssize_t index[3] = {0, 0, 0};
    int depth = 0;

    Where at(Py_ssize_t i) const {
        Where inner = *this;
        inner.index[inner.depth++] = i;
        return inner;
    }
    std::string str() const {
        std::string text = name;
        for (int d = 0; d < depth; ++d) text += "[" + std::to_string(index[d]) + "]";
        return text;
    }
};

// A list or tuple as a fast sequence, kept alive by `held` (so a borrowed reference), or
// NULL with a TypeError naming `what`. A str is refused: it would pass for a sequence of
// characters.
PyObject* held_sequence(PyObject* object, const Where& what, References& held) {
    if (PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be a list of str, not a str", what.str().c_str());
        return nullptr;
    }
    PyObject* sequence = PySequence_Fast(object, (what.str() + " must be a list or tuple").c_str());
    if (!sequence) return nullptr;
    held.keep(sequence);
    Py_DECREF(sequence);
    return sequence;
}

// Segment i's references, refs[i]: a non-empty list or tuple (kept by `held`), or NULL
// with an error.
PyObject* segment_references(PyObject* ref_seq, Py_ssize_t i, const Where& where,
                             References& held) {
    PyObject* segment = held_sequence(PySequence_Fast_GET_ITEM(ref_seq, i), where, held);
    if (segment && PySequence_Fast_GET_SIZE(segment) == 0) {
        PyErr_Format(PyExc_ValueError, "segment %zd has no reference", i);
        return nullptr;
    }
    return segment;
}

bool text_of(PyObject* object, const Where& what, References& held, TextRef& out) {
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what.str().c_str(),
                     Py_TYPE(object)->tp_name);
        return false;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(object) < 0) return false;
#endif
    held.keep(object);
    out.data = PyUnicode_DATA(object);
    out.kind = PyUnicode_KIND(object);
    out.length = static_cast<size_t>(PyUnicode_GET_LENGTH(object));
    return true;
}

// A batch's segments: hyps[i] read into batch.hyps[i], and refs[i], a non-empty list or
// tuple, read item by item into batch.refs, by `read(object, where, item)`, which sets
// a Python error naming `where` when it returns false.
template <class Item, class Read>
bool gather_segments(PyObject* hyps, PyObject* refs, References& held, Batch<Item>& batch,
                     Read read) {
    PyObject* hyp_seq = held_sequence(hyps, Where{"hyps"}, held);
    if (!hyp_seq) return false;
    PyObject* ref_seq = held_sequence(refs, Where{"refs"}, held);
    if (!ref_seq) return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(hyp_seq);
    if (PySequence_Fast_GET_SIZE(ref_seq) != n) {
        PyErr_Format(PyExc_ValueError, "%zd hypotheses but %zd reference lists", n,
                     PySequence_Fast_GET_SIZE(ref_seq));
        return false;
    }
    batch.hyps.resize(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
        if (!read(PySequence_Fast_GET_ITEM(hyp_seq, i), Where{"hyps"}.at(i), batch.hyps[i]))
            return false;
        const Where refs_where = Where{"refs"}.at(i);
        PyObject* segment = segment_references(ref_seq, i, refs_where, held);
        if (!segment) return false;
        const Py_ssize_t k = PySequence_Fast_GET_SIZE(segment);
        for (Py_ssize_t r = 0; r < k; ++r) {
            Item item;
            if (!read(PySequence_Fast_GET_ITEM(segment, r), refs_where.at(r), item))
                return false;
            batch.refs.push_back(item);
        }
        batch.ref_start.push_back(batch.refs.size());
    }
    return true;
}

// Segment texts: hyps[i] a str, refs[i] a non-empty list or tuple of str.
bool gather_texts(PyObject* hyps, PyObject* refs, References& held, Batch<TextRef>& batch) {
    return gather_segments(hyps, refs, held, batch,
                           [&](PyObject* object, const Where& where, TextRef& text) {
                               return text_of(object, where, held, text);
                           });
}

// A batch from columns: refs[i] (a non-empty list or tuple of str) is segment i's
// references, and hyps[j][i] (a str) its hypothesis of system j; the batch holds every
// system's item of each segment, segment by segment (j varies fastest), the items of a
// segment sharing its references' texts.
bool gather_columns(PyObject* refs, PyObject* hyps, References& held, Batch<TextRef>& batch) {
    PyObject* ref_seq = held_sequence(refs, Where{"refs"}, held);
    if (!ref_seq) return false;
    PyObject* system_seq = held_sequence(hyps, Where{"hyps"}, held);
    if (!system_seq) return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(ref_seq);
    const Py_ssize_t systems = PySequence_Fast_GET_SIZE(system_seq);
    std::vector<PyObject*> columns;
    for (Py_ssize_t j = 0; j < systems; ++j) {
        PyObject* column =
            held_sequence(PySequence_Fast_GET_ITEM(system_seq, j), Where{"hyps"}.at(j), held);
        if (!column) return false;
        if (PySequence_Fast_GET_SIZE(column) != n) {
            PyErr_Format(PyExc_ValueError, "%zd reference lists but %zd hypotheses in hyps[%zd]",
                         n, PySequence_Fast_GET_SIZE(column), j);
            return false;
        }
        columns.push_back(column);
    }
    batch.hyps.resize(static_cast<size_t>(n * systems));
    std::vector<TextRef> own;
    for (Py_ssize_t i = 0; i < n; ++i) {
        const Where refs_where = Where{"refs"}.at(i);
        PyObject* segment = segment_references(ref_seq, i, refs_where, held);
        if (!segment) return false;
        const Py_ssize_t k = PySequence_Fast_GET_SIZE(segment);
        own.resize(static_cast<size_t>(k));
        for (Py_ssize_t r = 0; r < k; ++r)
            if (!text_of(PySequence_Fast_GET_ITEM(segment, r), refs_where.at(r), held, own[r]))
                return false;
        for (Py_ssize_t j = 0; j < systems; ++j) {
            if (!text_of(PySequence_Fast_GET_ITEM(columns[j], i), Where{"hyps"}.at(j).at(i), held,
                         batch.hyps[i * systems + j]))
                return false;
            batch.refs.insert(batch.refs.end(), own.begin(), own.end());
            batch.ref_start.push_back(batch.refs.size());
        }
    }
    return true;
}

// Threads for a kernel over `segments` segments: at most thread_limit, which Python sets
// before each call to the CPUs the process may take (evalproto.base.compiled's
// kernel_threads: the affinity mask, a container's quota, one in a -j copy or a Dask
// worker), with at least MIN_SEGMENTS_PER_THREAD segments each (a thread costs tens of
// microseconds to start; a segment, a few).
constexpr long MAX_THREADS = 8;
constexpr size_t MIN_SEGMENTS_PER_THREAD = 64;
std::atomic<size_t> thread_limit{MAX_THREADS};

size_t kernel_threads(size_t segments) {
    return std::max<size_t>(1, std::min(thread_limit.load(), segments / MIN_SEGMENTS_PER_THREAD));
}

PyObject* set_threads(PyObject*, PyObject* arg) {
    const long threads = PyLong_AsLong(arg);
    if (threads == -1 && PyErr_Occurred()) return nullptr;
    if (threads < 1 || threads > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be in [1, %ld], not %ld", MAX_THREADS, threads);
        return nullptr;
    }
    return PyLong_FromSize_t(thread_limit.exchange(static_cast<size_t>(threads)));
}

// Runs work(part) for each part in [0, parts) without the GIL, each on a thread of its
// own (this one runs part 0), and turns C++ exceptions into a Python error: false then.
template <class Work>
bool run_parts(size_t parts, Work work) {
    enum Status { OK, NO_MEMORY, FAILED };
    std::vector<Status> status(parts, OK);
    std::vector<std::string> message(parts);
    auto run_part = [&](size_t part) {
        try {
            work(part);
        } catch (const std::bad_alloc&) {
            status[part] = NO_MEMORY;
        } catch (const std::exception& error) {
            status[part] = FAILED;
            message[part] = error.what();
        }
    };
    Py_BEGIN_ALLOW_THREADS
    std::vector<std::thread> threads;
    try {
        for (size_t part = 1; part < parts; ++part) threads.emplace_back(run_part, part);
    } catch (const std::system_error&) {
        // No more threads to be had: this one runs the parts that have none.
        for (size_t part = threads.size() + 1; part < parts; ++part) run_part(part);
    }
    run_part(0);
    for (std::thread& thread : threads) thread.join();
    Py_END_ALLOW_THREADS
    for (size_t part = 0; part < parts; ++part) {
        if (status[part] == OK) continue;
        if (status[part] == NO_MEMORY) PyErr_NoMemory();
        else PyErr_SetString(PyExc_RuntimeError, message[part].c_str());
        return false;
    }
    return true;
}

// A new bytearray of `count` doubles, and where they are.
PyObject* new_doubles(size_t count, double*& out) {
    PyObject* result =
        PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(count * sizeof(double)));
    if (result) out = reinterpret_cast<double*>(PyByteArray_AS_STRING(result));
    return result;
}

// Blocks of rows per thread in run_kernel: enough that a thread the system holds back
// (the machine shared with other work) leaves its blocks to the others, few enough that
// each block's start (its buffers, BLEU's first reference table) costs nothing much.
constexpr size_t BLOCKS_PER_THREAD = 8;

// Runs `kernel(out, begin, end)` without the GIL into a new bytearray of rows x width
// doubles, on kernel_threads(rows) threads that each take the next block of contiguous
// rows as they finish one (each row is computed alone, so the split changes no
// number), turning C++ exceptions into Python ones.
template <class Kernel>
PyObject* run_kernel(size_t rows, size_t width, Kernel kernel) {
    double* out = nullptr;
    PyObject* result = new_doubles(rows * width, out);
    if (!result) return nullptr;
    const size_t parts = kernel_threads(rows);
    const size_t blocks = parts == 1 ? 1 : parts * BLOCKS_PER_THREAD;
    std::atomic<size_t> next_block{0};
    if (!run_parts(parts, [&](size_t) {
            for (size_t b; (b = next_block++) < blocks;)
                kernel(out, rows * b / blocks, rows * (b + 1) / blocks);
        })) {
        Py_DECREF(result);
        return nullptr;
    }
    return result;
}

// A list or tuple of `count` str, read into `out` from `at`; its length is checked
// against `expected` (unless that is -1, when it sets it). False with an error.
bool gather_batch(PyObject* object, const Where& where, Py_ssize_t& expected, References& held,
                  std::vector<TextRef>& out) {
    PyObject* batch = held_sequence(object, where, held);
    if (!batch) return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(batch);
    if (expected >= 0 && n != expected) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd texts, where every batch holds %zd",
                     where.str().c_str(), n, expected);
        return false;
    }
    expected = n;
    for (Py_ssize_t i = 0; i < n; ++i) {
        TextRef text;
        if (!text_of(PySequence_Fast_GET_ITEM(batch, i), where.at(i), held, text)) return false;
        out.push_back(text);
    }
    return true;
}

// All-pairs batches: hyps, a list of B lists of H str; refs, None (the hypotheses
// themselves) or a list of B lists of R str. References that are the very hypotheses
// (the same str objects, as pairwise_scores(batches, batches) passes them) are
// symmetric too.
bool gather_pairwise(PyObject* hyps, PyObject* refs, References& held,
                     evalproto::PairwiseBatches& in) {
    PyObject* hyp_seq = held_sequence(hyps, Where{"hyps"}, held);
    if (!hyp_seq) return false;
    const Py_ssize_t batches = PySequence_Fast_GET_SIZE(hyp_seq);
    Py_ssize_t per_hyps = batches ? -1 : 0, per_refs = batches ? -1 : 0;
    for (Py_ssize_t b = 0; b < batches; ++b)
        if (!gather_batch(PySequence_Fast_GET_ITEM(hyp_seq, b), Where{"hyps"}.at(b), per_hyps,
                          held, in.hyps))
            return false;
    in.batches = static_cast<size_t>(batches);
    in.hyps_per_batch = static_cast<size_t>(per_hyps);
    in.symmetric = refs == Py_None;
    if (!in.symmetric) {
        PyObject* ref_seq = held_sequence(refs, Where{"refs"}, held);
        if (!ref_seq) return false;
        if (PySequence_Fast_GET_SIZE(ref_seq) != batches) {
            PyErr_Format(PyExc_ValueError, "%zd batches of hypotheses but %zd of references",
                         batches, PySequence_Fast_GET_SIZE(ref_seq));
            return false;
        }
        for (Py_ssize_t b = 0; b < batches; ++b)
            if (!gather_batch(PySequence_Fast_GET_ITEM(ref_seq, b), Where{"refs"}.at(b), per_refs,
                              held, in.refs))
                return false;
        in.symmetric = in.refs.size() == in.hyps.size() &&
                       std::equal(in.refs.begin(), in.refs.end(), in.hyps.begin(),
                                  [](const TextRef& a, const TextRef& b) { return a.data == b.data; });
    }
    if (in.symmetric) {
        in.refs.clear();
        per_refs = per_hyps;
    }
    in.refs_per_batch = static_cast<size_t>(per_refs);
    return true;
}

// Threads for an all-pairs kernel of `cells` cells: as kernel_threads, with at least
// MIN_CELLS_PER_THREAD cells each.
constexpr size_t MIN_CELLS_PER_THREAD = 1024;

// Runs an all-pairs kernel: each batch prepared, then each (batch, hypothesis) row
// filled, on threads that take the next one as they finish; the matrix as a bytearray.
template <class Make>
PyObject* run_pairwise(const evalproto::PairwiseBatches& in, Make make) {
    const size_t H = in.hyps_per_batch, cells = in.batches * H * in.refs_per_batch;
    double* out = nullptr;
    PyObject* result = new_doubles(cells, out);
    if (!result || cells == 0) return result;
    const size_t threads =
        std::max<size_t>(1, std::min(thread_limit.load(), cells / MIN_CELLS_PER_THREAD));
    std::unique_ptr<evalproto::Pairwise> kernel;
    try {
        kernel = make(threads);
    } catch (const std::exception& error) {
        Py_DECREF(result);
        PyErr_SetString(PyExc_ValueError, error.what());
        return nullptr;
    }
    std::atomic<size_t> next_batch{0}, next_row{0};
    const bool done =
        run_parts(threads, [&](size_t thread) {
            for (size_t b; (b = next_batch++) < in.batches;) kernel->prepare(thread, b);
        }) &&
        run_parts(threads, [&](size_t thread) {
            for (size_t row; (row = next_row++) < in.batches * H;)
                kernel->fill(thread, row / H, row % H, out);
        });
    if (!done) {
        Py_DECREF(result);
        return nullptr;
    }
    return result;
}

// BLEU's options checked, the tokenizer named; false with a ValueError.
bool bleu_options(int max_order, const char* tokenizer_name, evalproto::Tokenizer& tokenizer) {
    if (max_order < 1) {
        PyErr_SetString(PyExc_ValueError, "max_order must be at least 1");
        return false;
    }
    const std::string name = tokenizer_name;
    if (name == "13a") {
        tokenizer = evalproto::Tokenizer::T13a;
    } else if (name == "none") {
        tokenizer = evalproto::Tokenizer::None;
    } else if (name == "char") {
        tokenizer = evalproto::Tokenizer::Char;
    } else {
        PyErr_Format(PyExc_ValueError, "tokenizer must be '13a', 'none' or 'char', not '%s'",
                     tokenizer_name);
        return false;
    }
    return true;
}

PyObject* bleu_rows(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"hyps", "refs", "max_order", "tokenizer", nullptr};
    PyObject *hyps, *refs;
    int max_order;
    const char* tokenizer_name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOis:bleu_rows", const_cast<char**>(keywords),
                                     &hyps, &refs, &max_order, &tokenizer_name))
        return nullptr;
    evalproto::Tokenizer tokenizer;
    if (!bleu_options(max_order, tokenizer_name, tokenizer)) return nullptr;
    References held;
    Batch<TextRef> batch;
    if (!gather_texts(hyps, refs, held, batch)) return nullptr;
    return run_kernel(batch.segments(), 2 + 2 * static_cast<size_t>(max_order), [&](double* out, size_t begin, size_t end) {
        evalproto::bleu_rows(batch, max_order, tokenizer, out, begin, end);
    });
}

PyObject* bleu_columns(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"refs", "hyps", "max_order", "tokenizer", nullptr};
    PyObject *refs, *hyps;
    int max_order;
    const char* tokenizer_name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOis:bleu_columns",
                                     const_cast<char**>(keywords), &refs, &hyps, &max_order,
                                     &tokenizer_name))
        return nullptr;
    evalproto::Tokenizer tokenizer;
    if (!bleu_options(max_order, tokenizer_name, tokenizer)) return nullptr;
    References held;
    Batch<TextRef> batch;
    if (!gather_columns(refs, hyps, held, batch)) return nullptr;
    return run_kernel(batch.segments(), 2 + 2 * static_cast<size_t>(max_order),
                      [&](double* out, size_t begin, size_t end) {
                          evalproto::bleu_rows(batch, max_order, tokenizer, out, begin, end);
                      });
}

// chrF's options, as Python passes them, checked; false with a ValueError.
bool chrf_options(int whitespace, int eps_smoothing, evalproto::ChrfOptions& options) {
    if (options.char_order < 0 || options.word_order < 0 ||
        options.char_order + options.word_order == 0) {
        PyErr_SetString(PyExc_ValueError, "orders must be >= 0, and not both 0");
        return false;
    }
    // beta ** 2 and 1 + beta ** 2 must be exact integers, as they are in Python.
    if (options.beta < 0 || options.beta > 2000000000LL) {
        PyErr_SetString(PyExc_ValueError, "beta must be in [0, 2e9]");
        return false;
    }
    options.whitespace = whitespace;
    options.eps_smoothing = eps_smoothing;
    return true;
}

// chrF's rows of the batch that `gather` reads from the call's first two arguments,
// named `first` and `second` (chrf_rows: hyps and refs; chrf_columns: refs and hyps).
template <class Gather>
PyObject* chrf_batch(PyObject* args, PyObject* kwargs, const char* format, const char* first,
                     const char* second, Gather gather) {
    const char* keywords[] = {first, second, "char_order", "word_order", "beta",
                              "whitespace", "eps_smoothing", nullptr};
    PyObject *first_arg, *second_arg;
    evalproto::ChrfOptions options;
    int whitespace, eps_smoothing;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, const_cast<char**>(keywords),
                                     &first_arg, &second_arg, &options.char_order,
                                     &options.word_order, &options.beta, &whitespace,
                                     &eps_smoothing))
        return nullptr;
    if (!chrf_options(whitespace, eps_smoothing, options)) return nullptr;
    References held;
    Batch<TextRef> batch;
    if (!gather(first_arg, second_arg, held, batch)) return nullptr;
    const size_t width = 3 * static_cast<size_t>(options.char_order + options.word_order);
    return run_kernel(batch.segments(), width,
                      [&](double* out, size_t begin, size_t end) {
                          evalproto::chrf_rows(batch, options, out, begin, end);
                      });
}

PyObject* chrf_rows(PyObject*, PyObject* args, PyObject* kwargs) {
    return chrf_batch(args, kwargs, "OOiiLpp:chrf_rows", "hyps", "refs", gather_texts);
}

PyObject* chrf_columns(PyObject*, PyObject* args, PyObject* kwargs) {
    return chrf_batch(args, kwargs, "OOiiLpp:chrf_columns", "refs", "hyps", gather_columns);
}

PyObject* chrf_pairwise(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"hyps", "refs", "char_order", "word_order", "beta",
                                     "whitespace", "eps_smoothing", nullptr};
    PyObject *hyps, *refs;
    evalproto::ChrfOptions options;
    int whitespace, eps_smoothing;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOiiLpp:chrf_pairwise",
                                     const_cast<char**>(keywords), &hyps, &refs,
                                     &options.char_order, &options.word_order, &options.beta,
                                     &whitespace, &eps_smoothing))
        return nullptr;
    if (!chrf_options(whitespace, eps_smoothing, options)) return nullptr;
    References held;
    evalproto::PairwiseBatches in;
    if (!gather_pairwise(hyps, refs, held, in)) return nullptr;
    return run_pairwise(in, [&](size_t threads) {
        return evalproto::chrf_pairwise(in, options, threads);
    });
}

PyObject* bleu_pairwise(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"hyps", "refs", "max_order", "tokenizer", "smooth_method",
                                     "smooth_value", "effective_order", "compensated_sum",
                                     nullptr};
    PyObject *hyps, *refs;
    evalproto::BleuOptions options;
    const char *tokenizer_name, *smooth_name;
    int effective_order, compensated_sum;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOissdpp:bleu_pairwise",
                                     const_cast<char**>(keywords), &hyps, &refs,
                                     &options.max_order, &tokenizer_name, &smooth_name,
                                     &options.smooth_value, &effective_order, &compensated_sum))
        return nullptr;
    if (!bleu_options(options.max_order, tokenizer_name, options.tokenizer)) return nullptr;
    const std::string smooth = smooth_name;
    if (smooth == "none") {
        options.smooth = evalproto::Smooth::None;
    } else if (smooth == "floor") {
        options.smooth = evalproto::Smooth::Floor;
    } else if (smooth == "add-k") {
        options.smooth = evalproto::Smooth::AddK;
    } else if (smooth == "exp") {
        options.smooth = evalproto::Smooth::Exp;
    } else {
        PyErr_Format(PyExc_ValueError,
                     "smooth_method must be 'none', 'floor', 'add-k' or 'exp', not '%s'",
                     smooth_name);
        return nullptr;
    }
    options.effective_order = effective_order;
    options.compensated_sum = compensated_sum;
    References held;
    evalproto::PairwiseBatches in;
    if (!gather_pairwise(hyps, refs, held, in)) return nullptr;
    return run_pairwise(in, [&](size_t threads) {
        return evalproto::bleu_pairwise(in, options, threads);
    });
}

// A tokenized segment: a str (whose words str.split() finds) or a list or tuple of
// words.
bool words_of(PyObject* object, const Where& what, References& held,
              evalproto::TerBatch& batch, evalproto::WordSequence& out) {
    out.begin = batch.texts.size();
    if (PyUnicode_Check(object)) {
        out.split = true;
        TextRef text;
        if (!text_of(object, what, held, text)) return false;
        batch.texts.push_back(text);
    } else {
        out.split = false;
        PyObject* words =
            PySequence_Fast(object, (what.str() + " must be a str or a list of str").c_str());
        if (!words) return false;
        held.keep(words);
        Py_DECREF(words);
        for (Py_ssize_t w = 0; w < PySequence_Fast_GET_SIZE(words); ++w) {
            TextRef text;
            if (!text_of(PySequence_Fast_GET_ITEM(words, w), what.at(w), held, text))
                return false;
            batch.texts.push_back(text);
        }
    }
    out.end = batch.texts.size();
    return true;
}

PyObject* ter_rows(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"hyps", "refs", nullptr};
    PyObject *hyps, *refs;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:ter_rows", const_cast<char**>(keywords),
                                     &hyps, &refs))
        return nullptr;
    References held;
    evalproto::TerBatch batch;
    auto read = [&](PyObject* object, const Where& where, evalproto::WordSequence& words) {
        return words_of(object, where, held, batch, words);
    };
    if (!gather_segments(hyps, refs, held, batch.segments, read)) return nullptr;
    const size_t n = batch.segments.hyps.size();
    return run_kernel(n, 2, [&](double* out, size_t begin, size_t end) {
        evalproto::ter_rows(batch, out, begin, end);
    });
}

// TER of every pair: hyps and refs as for chrf_pairwise, each text tokenized already (a
// str split on whitespace); rows of [edits, ref_len], row (b * H + h) * R + r.
PyObject* ter_pairwise(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"hyps", "refs", nullptr};
    PyObject *hyps, *refs;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:ter_pairwise", const_cast<char**>(keywords),
                                     &hyps, &refs))
        return nullptr;
    References held;
    evalproto::PairwiseBatches in;
    if (!gather_pairwise(hyps, refs, held, in)) return nullptr;
    // Each text once; each pair a segment of the TER kernel over two of them.
    evalproto::TerBatch batch;
    const size_t H = in.hyps_per_batch, R = in.refs_per_batch;
    const std::vector<TextRef>& ref_texts = in.symmetric ? in.hyps : in.refs;
    batch.texts = in.hyps;
    batch.texts.insert(batch.texts.end(), ref_texts.begin(), ref_texts.end());
    const size_t first_ref = in.hyps.size();
    for (size_t b = 0; b < in.batches; ++b)
        for (size_t h = 0; h < H; ++h)
            for (size_t r = 0; r < R; ++r) {
                const size_t hyp = b * H + h, ref = first_ref + b * R + r;
                batch.segments.hyps.push_back({true, hyp, hyp + 1});
                batch.segments.refs.push_back({true, ref, ref + 1});
                batch.segments.ref_start.push_back(batch.segments.refs.size());
            }
    return run_kernel(batch.segments.segments(), 2, [&](double* out, size_t begin, size_t end) {
        evalproto::ter_rows(batch, out, begin, end);
    });
}

// The kernel's 13a tokens of one line, joined by spaces: what sacrebleu's
// Tokenizer13a()(line.rstrip()) returns. For tests; the BLEU kernel tokenizes itself.
PyObject* tokenize_13a(PyObject*, PyObject* arg) {
    References held;
    TextRef text;
    if (!text_of(arg, Where{"line"}, held, text)) return nullptr;
    std::vector<evalproto::cp_t> points;
    evalproto::append_code_points(text, points);
    evalproto::Scratch13a scratch;
    evalproto::Tokens tokens;
    evalproto::tokenize_13a(points.data(), points.size(), scratch, tokens);
    std::vector<Py_UCS4> joined;
    for (size_t t = 0; t < tokens.size(); ++t) {
        if (t) joined.push_back(' ');
        joined.insert(joined.end(), tokens.begin_of(t), tokens.begin_of(t) + tokens.length_of(t));
    }
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, joined.data(),
                                     static_cast<Py_ssize_t>(joined.size()));
}

PyMethodDef methods[] = {
    {"bleu_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(bleu_rows)),
     METH_VARARGS | METH_KEYWORDS,
     "bleu_rows(hyps, refs, max_order, tokenizer) -> bytearray\n\n"
     "BLEU statistics per segment, float64 rows of [hyp_len, closest_ref_len,\n"
     "correct_1..N, total_1..N]. refs[i] lists segment i's references; tokenizer\n"
     "is '13a', 'none' or 'char'. Lowercase in Python first."},
    {"bleu_columns", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(bleu_columns)),
     METH_VARARGS | METH_KEYWORDS,
     "bleu_columns(refs, hyps, max_order, tokenizer) -> bytearray\n\n"
     "bleu_rows of every system's item of each segment, segment by segment: refs[i]\n"
     "lists segment i's references, hyps[j][i] is its hypothesis of system j."},
    {"chrf_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(chrf_rows)),
     METH_VARARGS | METH_KEYWORDS,
     "chrf_rows(hyps, refs, char_order, word_order, beta, whitespace, eps_smoothing)\n"
     "-> bytearray\n\nchrF statistics per segment, float64 rows of [hyp, ref, match] per\n"
     "character order then per word order, of the reference with the best F."},
    {"chrf_columns", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(chrf_columns)),
     METH_VARARGS | METH_KEYWORDS,
     "chrf_columns(refs, hyps, char_order, word_order, beta, whitespace, eps_smoothing)\n"
     "-> bytearray\n\nchrf_rows of every system's item of each segment, segment by segment:\n"
     "refs[i] lists segment i's references, hyps[j][i] is its hypothesis of system j."},
    {"chrf_pairwise",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(chrf_pairwise)),
     METH_VARARGS | METH_KEYWORDS,
     "chrf_pairwise(hyps, refs, char_order, word_order, beta, whitespace, eps_smoothing)\n"
     "-> bytearray\n\nThe chrF sentence score of every hypothesis of each batch against every\n"
     "reference of it: hyps holds B lists of H str, refs B lists of R str or None (the\n"
     "hypotheses themselves); float64 cells, cell (b * H + h) * R + r."},
    {"bleu_pairwise",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(bleu_pairwise)),
     METH_VARARGS | METH_KEYWORDS,
     "bleu_pairwise(hyps, refs, max_order, tokenizer, smooth_method, smooth_value,\n"
     "effective_order, compensated_sum) -> bytearray\n\nAs chrf_pairwise, BLEU's sentence\n"
     "scores (compensated_sum: Python's sum() of floats is compensated, as from 3.12)."},
    {"ter_pairwise",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(ter_pairwise)),
     METH_VARARGS | METH_KEYWORDS,
     "ter_pairwise(hyps, refs) -> bytearray\n\nAs chrf_pairwise, TER's rows [edits, ref_len]\n"
     "of every pair, of texts tokenized already (split on whitespace)."},
    {"ter_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(ter_rows)),
     METH_VARARGS | METH_KEYWORDS,
     "ter_rows(hyps, refs) -> bytearray\n\nTER statistics per segment, float64 rows of\n"
     "[edits, avg_ref_len]. Each hypothesis and reference is tokenized already: a str\n"
     "split on whitespace, or a list of words."},
    {"set_threads", set_threads, METH_O,
     "set_threads(n) -> int\n\nThe most threads a kernel call runs on from now on (1 to\n"
     "MAX_THREADS, 8 at first); returns the last setting. evalproto sets it before each\n"
     "call to the CPUs the process may take (evalproto.base.compiled.kernel_threads)."},
    {"tokenize_13a", tokenize_13a, METH_O,
     "tokenize_13a(line) -> str\n\nThe BLEU kernel's 13a tokens of a line, joined by spaces,\n"
     "as sacrebleu's Tokenizer13a()(line.rstrip()) (for tests)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.evaluators._native",
                      "Compiled kernels for BLEU, chrF and TER statistics (see native/).", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__native(void) {
    PyObject* m = PyModule_Create(&module);
    if (!m) return nullptr;
    if (PyModule_AddIntConstant(m, "MAX_THREADS", MAX_THREADS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SHIFT_SIZE", evalproto::MAX_SHIFT_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SHIFT_DIST", evalproto::MAX_SHIFT_DIST) < 0 ||
        PyModule_AddIntConstant(m, "BEAM_WIDTH", evalproto::BEAM_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SHIFT_CANDIDATES", evalproto::MAX_SHIFT_CANDIDATES) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
