// evalproto.wire._lines: the protocol's per-line work, for the usual batch.
//
// A tuner pipes thousands of SCORE lines at a time; parsing each request in Python and
// formatting each reply cost the server more than BLEU's statistics, and reading the
// replies cost the client as much. These functions do the usual case a batch per call
// and decline anything else (None), which the Python code in evalproto/wire then
// handles line by line, as the reference that says which line is wrong and why.
// tests/test_wire_native.py checks that both ways agree.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// Python's str.strip() of a str: what the protocol does to every field.
PyObject* stripped(PyObject* text) {
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void* data = PyUnicode_DATA(text);
    Py_ssize_t begin = 0, end = length;
    while (begin < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, begin))) ++begin;
    while (end > begin && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) --end;
    if (begin == 0 && end == length) {
        Py_INCREF(text);
        return text;
    }
    return PyUnicode_Substring(text, begin, end);
}

// A field of a line (bytes [begin, end)) decoded strictly and stripped; NULL with no
// error set when it is not UTF-8, NULL with an error set on a real failure.
PyObject* field(const char* begin, const char* end) {
    PyObject* text = PyUnicode_DecodeUTF8(begin, end - begin, "strict");
    if (!text) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return nullptr;
        PyErr_Clear();
        return nullptr;
    }
    PyObject* result = stripped(text);
    Py_DECREF(text);
    return result;
}

// One line as a SCORE request ((refs...), hyp), built as `item_type`; Py_None (a new
// reference) when the line is anything else; NULL on a real failure.
PyObject* score_request(PyObject* line, PyTypeObject* item_type) {
    if (!PyBytes_Check(line)) Py_RETURN_NONE;
    const char* text = PyBytes_AS_STRING(line);
    const char* const stop = text + PyBytes_GET_SIZE(line);
    // Field boundaries: "|||" found left to right, as str.split finds them.
    std::string_view rest(text, stop - text);
    std::vector<std::pair<const char*, const char*>> bounds;
    for (;;) {
        const size_t at = rest.find("|||");
        if (at == std::string_view::npos) {
            bounds.emplace_back(rest.data(), stop);
            break;
        }
        bounds.emplace_back(rest.data(), rest.data() + at);
        rest.remove_prefix(at + 3);
    }
    if (bounds.size() < 3) Py_RETURN_NONE;
    PyObject* command = field(bounds[0].first, bounds[0].second);
    if (!command) {
        if (PyErr_Occurred()) return nullptr;
        Py_RETURN_NONE;
    }
    const bool is_score = PyUnicode_CompareWithASCIIString(command, "SCORE") == 0;
    Py_DECREF(command);
    if (!is_score) Py_RETURN_NONE;
    const Py_ssize_t refs_count = static_cast<Py_ssize_t>(bounds.size()) - 2;
    PyObject* refs = PyTuple_New(refs_count);
    if (!refs) return nullptr;
    for (Py_ssize_t r = 0; r < refs_count; ++r) {
        PyObject* ref = field(bounds[r + 1].first, bounds[r + 1].second);
        if (!ref) {
            Py_DECREF(refs);
            if (PyErr_Occurred()) return nullptr;
            Py_RETURN_NONE;
        }
        PyTuple_SET_ITEM(refs, r, ref);
    }
    PyObject* hyp = field(bounds.back().first, bounds.back().second);
    if (!hyp) {
        Py_DECREF(refs);
        if (PyErr_Occurred()) return nullptr;
        Py_RETURN_NONE;
    }
    // As tuple.__new__(item_type, (refs, hyp)) makes a NamedTuple, without calling Python.
    PyObject* item = item_type->tp_alloc(item_type, 2);
    if (!item) {
        Py_DECREF(refs);
        Py_DECREF(hyp);
        return nullptr;
    }
    PyTuple_SET_ITEM(item, 0, refs);
    PyTuple_SET_ITEM(item, 1, hyp);
    return item;
}

PyObject* score_requests(PyObject*, PyObject* args) {
    PyObject* lines;
    PyTypeObject* item_type;
    if (!PyArg_ParseTuple(args, "O!O!:score_requests", &PyList_Type, &lines, &PyType_Type,
                          &item_type))
        return nullptr;
    if (!PyType_IsSubtype(item_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "item_type must be a tuple type");
        return nullptr;
    }
    const Py_ssize_t count = PyList_GET_SIZE(lines);
    PyObject* items = PyList_New(count);
    if (!items) return nullptr;
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject* item = score_request(PyList_GET_ITEM(lines, i), item_type);
        if (!item || item == Py_None) {
            Py_DECREF(items);
            return item;  // NULL (an error) or None (not a plain SCORE batch)
        }
        PyList_SET_ITEM(items, i, item);
    }
    return items;
}

// Appends `value` as evalproto.base.numerals.format_number writes it: an integral value
// as an integer, any other as repr(). False (nothing appended) for a value outside
// what this writes (not finite, or integral beyond 2**63).
bool append_number(double value, std::string& out) {
    if (!std::isfinite(value)) return false;
    if (value == std::trunc(value)) {
        if (std::fabs(value) >= 9223372036854775808.0) return false;
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits,
                                       static_cast<long long>(value)).ptr;
        out.append(digits, static_cast<size_t>(end - digits));
        return true;
    }
    char* repr = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    if (!repr) {
        PyErr_Clear();
        return false;
    }
    out.append(repr);
    PyMem_Free(repr);
    return true;
}

PyObject* format_rows(PyObject*, PyObject* args) {
    PyObject* rows;
    Py_ssize_t count, width;
    if (!PyArg_ParseTuple(args, "Onn:format_rows", &rows, &count, &width)) return nullptr;
    Py_buffer view;
    if (PyObject_GetBuffer(rows, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return nullptr;
    const bool float64 = view.format && std::strcmp(view.format, "d") == 0 &&
                         view.itemsize == sizeof(double);
    if (!float64 || count < 0 || width <= 0 ||
        view.len != count * width * static_cast<Py_ssize_t>(sizeof(double))) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    const Py_ssize_t values = count * width;
    std::string out;
    out.reserve(static_cast<size_t>(values) * 4);
    const char* bytes = static_cast<const char*>(view.buf);
    bool ok = true;
    for (Py_ssize_t i = 0; i < values && ok; ++i) {
        double value;
        std::memcpy(&value, bytes + i * sizeof(double), sizeof value);
        ok = append_number(value, out);
        out.push_back((i + 1) % width == 0 ? '\n' : ' ');
    }
    PyBuffer_Release(&view);
    if (!ok) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

// Whether token [begin, end) is an ASCII decimal as evalproto.base.numerals.DECIMAL
// reads one: [+-]?(digits[.digits?] | .digits)([eE][+-]?digits)?
bool is_decimal(const char* begin, const char* end) {
    const char* p = begin;
    auto digits = [&]() {
        const char* start = p;
        while (p < end && *p >= '0' && *p <= '9') ++p;
        return p > start;
    };
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (digits()) {
        if (p < end && *p == '.') {
            ++p;
            digits();
        }
    } else {
        if (p == end || *p != '.') return false;
        ++p;
        if (!digits()) return false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        ++p;
        if (p < end && (*p == '+' || *p == '-')) ++p;
        if (!digits()) return false;
    }
    return p == end;
}

// What str.split() splits ASCII text on.
bool is_ascii_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// A decimal token that is an integer of at most 15 digits (the usual reply: counts)
// as its double, which is exact, as float() reads it (with "-0" as -0.0); false for
// any other token.
bool small_integer(const char* begin, const char* end, double& value) {
    const char* p = begin;
    const bool negative = p < end && *p == '-';
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p == end || end - p > 15) return false;
    int64_t whole = 0;
    for (; p < end; ++p) {
        if (*p < '0' || *p > '9') return false;
        whole = whole * 10 + (*p - '0');
    }
    value = negative ? -static_cast<double>(whole) : static_cast<double>(whole);
    return true;
}

PyObject* parse_rows(PyObject*, PyObject* args) {
    PyObject* lines;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "O!n:parse_rows", &PyList_Type, &lines, &width)) return nullptr;
    const Py_ssize_t count = PyList_GET_SIZE(lines);
    std::string values;  // the float64 values, back to back
    values.reserve(static_cast<size_t>(count * width) * sizeof(double));
    std::string token;
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject* line = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line)) Py_RETURN_NONE;
        const char* p = static_cast<const char*>(PyUnicode_DATA(line));
        const char* const end = p + PyUnicode_GET_LENGTH(line);
        Py_ssize_t found = 0;
        for (;;) {
            while (p < end && is_ascii_space(*p)) ++p;
            if (p == end) break;
            const char* start = p;
            while (p < end && !is_ascii_space(*p)) ++p;
            if (++found > width || !is_decimal(start, p)) Py_RETURN_NONE;
            double value;
            if (!small_integer(start, p, value)) {
                token.assign(start, p);  // NUL-terminated for PyOS_string_to_double
                value = PyOS_string_to_double(token.c_str(), nullptr, nullptr);
                if (value == -1.0 && PyErr_Occurred()) return nullptr;
                if (!std::isfinite(value)) Py_RETURN_NONE;
            }
            values.append(reinterpret_cast<const char*>(&value), sizeof value);
        }
        if (found != width) Py_RETURN_NONE;
    }
    return PyByteArray_FromStringAndSize(values.data(), static_cast<Py_ssize_t>(values.size()));
}

PyMethodDef methods[] = {
    {"score_requests", score_requests, METH_VARARGS,
     "score_requests(lines, item_type) -> list | None\n\nEach raw line (bytes) as a SCORE\n"
     "request, item_type((refs...), hyp) with every field stripped as str.strip does; None\n"
     "unless every line is a well-formed SCORE request in UTF-8."},
    {"format_rows", format_rows, METH_VARARGS,
     "format_rows(rows, count, width) -> bytes | None\n\n`count` rows of `width` numbers (a\n"
     "C-contiguous float64 buffer) as reply lines, each ending in a newline, the numbers as\n"
     "format_number writes them; None if rows is not that buffer, or holds a value that is\n"
     "not finite or is an integer beyond 2**63."},
    {"parse_rows", parse_rows, METH_VARARGS,
     "parse_rows(lines, width) -> bytearray | None\n\nReply lines (str) of `width` finite ASCII\n"
     "decimals each as float64 values back to back (read as float() reads them); None if\n"
     "any line is anything else."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "evalproto.wire._lines",
                      "The protocol server's compiled batch path (see native/wire.cpp).", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__lines(void) { return PyModule_Create(&module); }
