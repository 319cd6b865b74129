// evalproto.readers._lmlog: the per-event work of reading an LM Challenge log.
//
// `event_columns` reads a chunk of log lines straight into the columns that the rows
// are made of (see its section below). For the chunks it declines, msgspec decodes the
// events, and two loops read them: the first 8 bytes of each target's MD5 (lmc's
// fingerprint hash of a string), and the next-word rank and the completion point from
// an event's `completions`. Everything runs with the GIL held and returns values packed
// in bytes that numpy.frombuffer wraps. evalproto/readers/lmlogs.py keeps the Python
// code as the reference (EVALPROTO_PURE_PYTHON=1); tests/test_native.py and
// tests/test_lmlog_native.py check that both give the same values.
//
// The parts: md5.cpp (lmc's fingerprint hash), jsonl.hpp/.cpp (a JSON line reader),
// lmevents.hpp/.cpp (events, keys and ranks); this file is the CPython glue.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "lmevents.hpp"

namespace {

using namespace lmlog;

// -- completions ----------------------------------------------------------------------


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

// -- a chunk of events, read straight into columns ----------------------------------------
//
// The usual log line is an object of plain fields; reading a chunk of them here, into
// the columns that evalproto/readers/lmlogs.py builds rows from, spares a million
// Python objects a million events. Anything else is declined (the whole chunk), and
// msgspec reads it as the reference does: an error (which it names), a reranking
// candidate list, and JSON this reader does not take (duplicate fields, an empty line,
// a lone surrogate, numbers or keys outside a 64-bit integer, deep nesting). What is
// taken is valid JSON that msgspec reads to the same values (tests/test_lm_score.py).

// Python objects for keys, with one object per distinct string of the chunk.
class KeyObjects {
  public:
    ~KeyObjects() {
        for (auto& entry : strings_) Py_DECREF(entry.second);
    }
    PyObject* get(const Key& key) {  // a new reference
        if (key.kind == Key::Null) Py_RETURN_NONE;
        if (key.kind == Key::Integer) {
            if (key.is_bool) return PyBool_FromLong(static_cast<long>(key.integer));
            return PyLong_FromLongLong(key.integer);
        }
        auto found = strings_.find(key.text);
        if (found == strings_.end()) {
            PyObject* text = PyUnicode_DecodeUTF8(key.text.data(),
                                                  static_cast<Py_ssize_t>(key.text.size()),
                                                  "strict");
            if (!text) return nullptr;
            found = strings_.emplace(key.text, text).first;
        }
        Py_INCREF(found->second);
        return found->second;
    }

  private:
    std::unordered_map<std::string, PyObject*> strings_;
};

template <class T>
PyObject* packed(const std::vector<T>& values) {
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(values.data()),
                                     static_cast<Py_ssize_t>(values.size() * sizeof(T)));
}

// lmc's hash of a key, with the last string's MD5 remembered (users repeat).
class KeyHasher {
  public:
    uint64_t operator()(const Key& key) {
        if (key.kind != Key::Text) return key.hash();
        if (!known_ || key.text != text_) {
            text_ = key.text;
            hash_ = key.hash();
            known_ = true;
        }
        return hash_;
    }

  private:
    bool known_ = false;
    std::string text_;
    uint64_t hash_ = 0;
};

PyObject* event_columns(PyObject*, PyObject* args) {
    PyObject* log;
    Py_ssize_t begin, end;
    if (!PyArg_ParseTuple(args, "O!nn:event_columns", &PyBytes_Type, &log, &begin, &end))
        return nullptr;
    if (begin < 0 || end < begin || end > PyBytes_GET_SIZE(log)) {
        PyErr_SetString(PyExc_ValueError, "begin and end must lie in the log, in order");
        return nullptr;
    }
    const char* data = PyBytes_AS_STRING(log) + begin;
    const char* const stop = PyBytes_AS_STRING(log) + end;
    std::vector<Key> users, messages;  // of every event
    std::vector<uint8_t> select, changes;
    std::vector<int64_t> lengths, ranks;
    std::vector<uint64_t> hashes;
    std::vector<double> logps;
    size_t lines = 1;
    for (const char* at = data; (at = static_cast<const char*>(std::memchr(at, '\n', stop - at)));
         ++at)
        ++lines;
    for (auto* column : {&users, &messages}) column->reserve(lines);
    select.reserve(lines);
    changes.reserve(2 * lines);
    lengths.reserve(lines);
    ranks.reserve(2 * lines);
    hashes.reserve(lines);
    logps.reserve(lines);
    Event event;
    Key target;
    target.kind = Key::Text;
    std::string name;
    KeyHasher user_hash, message_hash, token_hash;
    size_t previous = SIZE_MAX;  // the last selected event
    bool declined = false;
    // The parse touches no Python object (the caller holds `log`), so other threads
    // run meanwhile: log_stats reads the next chunks while it turns this one into rows.
    Py_BEGIN_ALLOW_THREADS
    try {
        for (const char* line = data; line < stop;) {
            const char* end = static_cast<const char*>(std::memchr(line, '\n', stop - line));
            if (!end) end = stop;
            LineReader reader(line, end);
            read_event(reader, event, name);
            line = end + 1;
            users.push_back(std::move(event.user));
            messages.push_back(std::move(event.message));
            select.push_back(event.select);
            if (!event.select) continue;
            const Key &user = users.back(), &message = messages.back();
            const bool user_changed = previous == SIZE_MAX || !(user == users[previous]);
            changes.push_back(user_changed);
            changes.push_back(user_changed || !(message == messages[previous]));
            previous = users.size() - 1;
            lengths.push_back(static_cast<int64_t>(code_points(event.target)));
            target.text.swap(event.target);
            const uint64_t hash = ((user_hash(user) * 48677u + message_hash(message)) * 48677u +
                                   token_hash(event.token)) * 48677u + target.hash();
            target.text.swap(event.target);
            hashes.push_back(hash & 0xFFFFFFFFu);
            int64_t rank, start;
            event_rank(event, rank, start);
            ranks.push_back(rank);
            ranks.push_back(start);
            logps.push_back(event.logp);
        }
    } catch (const Declined&) {
        declined = true;
    }
    Py_END_ALLOW_THREADS
    if (declined) Py_RETURN_NONE;
    const size_t n = users.size();
    KeyObjects objects;
    PyObject* user_list = PyList_New(static_cast<Py_ssize_t>(n));
    PyObject* message_list = user_list ? PyList_New(static_cast<Py_ssize_t>(n)) : nullptr;
    if (!message_list) {
        Py_XDECREF(user_list);
        return nullptr;
    }
    PyObject* pair = nullptr;  // consecutive events of one message share their pair
    for (size_t i = 0; i < n; ++i) {
        PyObject* user = objects.get(users[i]);
        if (!user) break;
        PyList_SET_ITEM(user_list, static_cast<Py_ssize_t>(i), user);
        if (pair && users[i].same_object_type(users[i - 1]) &&
            messages[i].same_object_type(messages[i - 1])) {
            Py_INCREF(pair);
        } else {
            PyObject* message = objects.get(messages[i]);
            pair = message ? PyTuple_Pack(2, user, message) : nullptr;
            Py_XDECREF(message);
            if (!pair) break;
        }
        PyList_SET_ITEM(message_list, static_cast<Py_ssize_t>(i), pair);
    }
    if (PyErr_Occurred()) {  // the lists' unset items are NULL, which they skip
        Py_DECREF(user_list);
        Py_DECREF(message_list);
        return nullptr;
    }
    return Py_BuildValue("(NNNNNNNN)", user_list, message_list, packed(select),
                         packed(changes), packed(lengths), packed(hashes), packed(ranks),
                         packed(logps));
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
    {"event_columns", event_columns, METH_VARARGS,
     "event_columns(log, begin, end) -> tuple | None\n\nThe lines of log[begin:end] (bytes\n"
     "of an LM Challenge log, whole lines), one event each, read into (users, messages,\n"
     "select, changes, lengths, hashes, ranks, logps): see _Columns in\n"
     "evalproto/readers/lmlogs.py. None for a chunk this reader declines."},
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
