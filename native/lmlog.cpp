// evalproto.readers._lmlog: the per-event loops of reading an LM Challenge log.
//
// Two loops that Python ran once per event of a million-event log: the first 8 bytes
// of each target's MD5 (lmc's fingerprint hash of a string), and the next-word rank
// and the completion point from an event's `completions`. Both read the objects that
// msgspec decoded, with the GIL held, and return int64 or uint64 values packed in a
// bytearray that numpy.frombuffer wraps. evalproto/readers/lmlog.py keeps the Python
// versions as the reference (EVALPROTO_PURE_PYTHON=1); tests/test_lm_score.py checks
// that both give the same values.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <cstring>

namespace {

// -- MD5 (RFC 1321) ---------------------------------------------------------------------

const uint32_t SHIFTS[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                             5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                             4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                             6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// floor(abs(sin(i + 1)) * 2**32)
const uint32_t SINES[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
    0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
    0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
    0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
    0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
    0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
    0xeb86d391};

inline uint32_t rotate_left(uint32_t value, uint32_t bits) {
    return (value << bits) | (value >> (32 - bits));
}

void md5_block(uint32_t state[4], const unsigned char block[64]) {
    uint32_t words[16];
    for (int i = 0; i < 16; ++i) {
        words[i] = static_cast<uint32_t>(block[4 * i]) |
                   static_cast<uint32_t>(block[4 * i + 1]) << 8 |
                   static_cast<uint32_t>(block[4 * i + 2]) << 16 |
                   static_cast<uint32_t>(block[4 * i + 3]) << 24;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    for (int i = 0; i < 64; ++i) {
        uint32_t mixed;
        int word;
        if (i < 16) {
            mixed = (b & c) | (~b & d);
            word = i;
        } else if (i < 32) {
            mixed = (d & b) | (~d & c);
            word = (5 * i + 1) % 16;
        } else if (i < 48) {
            mixed = b ^ c ^ d;
            word = (3 * i + 5) % 16;
        } else {
            mixed = c ^ (b | ~d);
            word = (7 * i) % 16;
        }
        const uint32_t next = d;
        d = c;
        c = b;
        b = b + rotate_left(a + mixed + SINES[i] + words[word], SHIFTS[i]);
        a = next;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

// The first 8 bytes of the MD5 digest of `size` bytes, read as a little-endian integer.
uint64_t md5_prefix(const unsigned char* data, size_t size) {
    uint32_t state[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    size_t done = 0;
    for (; size - done >= 64; done += 64) md5_block(state, data + done);
    unsigned char tail[128] = {0};
    const size_t left = size - done;
    std::memcpy(tail, data + done, left);
    tail[left] = 0x80;
    const size_t tail_size = left < 56 ? 64 : 128;
    const uint64_t bits = static_cast<uint64_t>(size) * 8;
    for (int i = 0; i < 8; ++i) tail[tail_size - 8 + i] = static_cast<unsigned char>(bits >> (8 * i));
    md5_block(state, tail);
    if (tail_size == 128) md5_block(state, tail + 64);
    return static_cast<uint64_t>(state[0]) | static_cast<uint64_t>(state[1]) << 32;
}

// -- completions ----------------------------------------------------------------------

const Py_ssize_t COMPLETION_MAX_RANK = 2;

// A list (a new reference), or NULL with a TypeError naming `what`.
PyObject* as_list(PyObject* object, const char* what) {
    if (!PyList_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be a list, not %.100s", what,
                     Py_TYPE(object)->tp_name);
        return nullptr;
    }
    Py_INCREF(object);
    return object;
}

bool check_str(PyObject* object, const char* what) {
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what,
                     Py_TYPE(object)->tp_name);
        return false;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(object) < 0) return false;
#endif
    return true;
}

// Whether target[start:] == suffix (both str).
bool tail_equals(PyObject* target, Py_ssize_t start, PyObject* suffix) {
    const Py_ssize_t length = PyUnicode_GET_LENGTH(target);
    const Py_ssize_t rest = start < length ? length - start : 0;
    if (PyUnicode_GET_LENGTH(suffix) != rest) return false;
    if (rest == 0) return true;
    const int kind = PyUnicode_KIND(target), suffix_kind = PyUnicode_KIND(suffix);
    const void* data = PyUnicode_DATA(target);
    const void* suffix_data = PyUnicode_DATA(suffix);
    if (kind == suffix_kind) {
        return std::memcmp(static_cast<const char*>(data) + start * kind, suffix_data,
                           static_cast<size_t>(rest * kind)) == 0;
    }
    // The tail of a wide str may be narrow: compare code points.
    for (Py_ssize_t i = 0; i < rest; ++i) {
        if (PyUnicode_READ(kind, data, start + i) != PyUnicode_READ(suffix_kind, suffix_data, i)) {
            return false;
        }
    }
    return true;
}

// The rank (1-based, 0 if absent) of target among `words[0]`, and how many characters
// were typed before the rest of the word was among the top two completions (-1 if
// never): 0 when the rank is within the top two, else the first i >= 1 for which
// target[i:] is among words[i][:2]. Returns false with a Python error set.
bool rank_and_start(PyObject* words, PyObject* target, int64_t& rank, int64_t& start) {
    rank = 0;
    start = -1;
    if (words == Py_None) return true;
    if (!PyList_Check(words) || PyList_GET_SIZE(words) == 0) {
        PyErr_SetString(PyExc_TypeError, "completions must be a non-empty list of lists");
        return false;
    }
    const Py_ssize_t count = PyList_GET_SIZE(words);
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject* suffixes = PyList_GET_ITEM(words, i);
        if (!PyList_Check(suffixes)) {
            PyErr_Format(PyExc_TypeError, "completions[%zd] must be a list, not %.100s", i,
                         Py_TYPE(suffixes)->tp_name);
            return false;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(suffixes); ++j) {
            if (!check_str(PyList_GET_ITEM(suffixes, j), "a completion")) return false;
        }
    }
    PyObject* first = PyList_GET_ITEM(words, 0);
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(first); ++j) {
        if (tail_equals(target, 0, PyList_GET_ITEM(first, j))) {
            rank = j + 1;
            break;
        }
    }
    if (rank > 0 && rank <= COMPLETION_MAX_RANK) {
        start = 0;
        return true;
    }
    for (Py_ssize_t i = 1; i < count; ++i) {
        PyObject* suffixes = PyList_GET_ITEM(words, i);
        const Py_ssize_t top = PyList_GET_SIZE(suffixes) < COMPLETION_MAX_RANK
                                   ? PyList_GET_SIZE(suffixes) : COMPLETION_MAX_RANK;
        for (Py_ssize_t j = 0; j < top; ++j) {
            if (tail_equals(target, i, PyList_GET_ITEM(suffixes, j))) {
                start = i;
                return true;
            }
        }
    }
    return true;
}

// -- the module -------------------------------------------------------------------------

PyObject* md5_prefixes(PyObject*, PyObject* arg) {
    PyObject* strings = as_list(arg, "strings");
    if (!strings) return nullptr;
    const Py_ssize_t n = PyList_GET_SIZE(strings);
    PyObject* out = PyByteArray_FromStringAndSize(nullptr, n * 8);
    if (out) {
        uint64_t* values = reinterpret_cast<uint64_t*>(PyByteArray_AS_STRING(out));
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject* string = PyList_GET_ITEM(strings, i);
            Py_ssize_t size;
            const char* utf8 = check_str(string, "each value") ? PyUnicode_AsUTF8AndSize(string, &size)
                                                               : nullptr;
            if (!utf8) {
                Py_CLEAR(out);
                break;
            }
            values[i] = md5_prefix(reinterpret_cast<const unsigned char*>(utf8),
                                   static_cast<size_t>(size));
        }
    }
    Py_DECREF(strings);
    return out;
}

PyObject* prediction_ranks(PyObject*, PyObject* args) {
    PyObject *completions_arg, *targets_arg;
    if (!PyArg_ParseTuple(args, "OO:prediction_ranks", &completions_arg, &targets_arg)) {
        return nullptr;
    }
    PyObject* completions = as_list(completions_arg, "completions");
    if (!completions) return nullptr;
    PyObject* targets = as_list(targets_arg, "targets");
    if (!targets) {
        Py_DECREF(completions);
        return nullptr;
    }
    const Py_ssize_t n = PyList_GET_SIZE(targets);
    PyObject* out = nullptr;
    if (PyList_GET_SIZE(completions) != n) {
        PyErr_Format(PyExc_ValueError, "%zd completions but %zd targets",
                     PyList_GET_SIZE(completions), n);
    } else {
        out = PyByteArray_FromStringAndSize(nullptr, n * 16);
    }
    if (out) {
        int64_t* values = reinterpret_cast<int64_t*>(PyByteArray_AS_STRING(out));
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject* target = PyList_GET_ITEM(targets, i);
            if (!check_str(target, "each target") ||
                !rank_and_start(PyList_GET_ITEM(completions, i), target, values[2 * i],
                                values[2 * i + 1])) {
                Py_CLEAR(out);
                break;
            }
        }
    }
    Py_DECREF(completions);
    Py_DECREF(targets);
    return out;
}

PyMethodDef methods[] = {
    {"md5_prefixes", md5_prefixes, METH_O,
     "md5_prefixes(strings) -> bytearray\n\nPer str, the first 8 bytes of the MD5 of its UTF-8,\n"
     "as a little-endian uint64 (lmc's hash of a string)."},
    {"prediction_ranks", prediction_ranks, METH_VARARGS,
     "prediction_ranks(completions, targets) -> bytearray\n\nPer event, int64 pairs: the rank\n"
     "of the target in completions[0] (0 if absent), and the characters typed before the\n"
     "rest of the word was among the top two completions (-1 if never; None completions\n"
     "give 0 and -1)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.readers._lmlog",
                      "Compiled loops of reading LM Challenge logs (see native/lmlog.cpp).", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__lmlog(void) { return PyModule_Create(&module); }
