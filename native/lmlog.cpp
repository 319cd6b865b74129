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
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// -- a chunk of events, read straight into columns ----------------------------------------
//
// The usual log line is an object of plain fields; reading a chunk of them here, into
// the columns that evalproto/readers/lmlogs.py builds rows from, spares a million
// Python objects a million events. Anything else is declined (the whole chunk), and
// msgspec reads it as the reference does: an error (which it names), a reranking
// candidate list, and JSON this reader does not take (duplicate fields, an empty line,
// a lone surrogate, numbers or keys outside a 64-bit integer, deep nesting). What is
// taken is valid JSON that msgspec reads to the same values (tests/test_lm_score.py).

const int MAX_DEPTH = 64;

// A user, message or token: null, an integer (a bool is one, as in Python), or a
// string (its UTF-8).
struct Key {
    enum Kind { Null, Integer, Text } kind = Null;
    bool is_bool = false;
    int64_t integer = 0;
    std::string text;

    bool operator==(const Key& other) const {  // Python's ==: True == 1
        return kind == other.kind && integer == other.integer && text == other.text;
    }
    bool same_object_type(const Key& other) const {
        return *this == other && is_bool == other.is_bool;
    }
    uint64_t hash() const {  // lmc's: MD5 prefix, 50123 * integer, 49307 for null
        if (kind == Text)
            return md5_prefix(reinterpret_cast<const unsigned char*>(text.data()), text.size());
        if (kind == Integer) return 50123u * static_cast<uint64_t>(integer);
        return 49307u;
    }
};

class Declined {};  // the chunk is not one this reader takes

class LineReader {
  public:
    LineReader(const char* begin, const char* end) : p_(begin), end_(end) {}

    void space() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')) ++p_;
    }
    bool at_end() const { return p_ == end_; }
    char peek() const { return p_ < end_ ? *p_ : '\0'; }
    void expect(char c) {
        space();
        if (p_ == end_ || *p_ != c) throw Declined();
        ++p_;
    }
    bool take(char c) {
        space();
        if (p_ < end_ && *p_ == c) {
            ++p_;
            return true;
        }
        return false;
    }
    template <size_t N>
    bool literal(const char (&word)[N]) {  // true, false, null
        constexpr size_t size = N - 1;
        if (static_cast<size_t>(end_ - p_) < size || std::memcmp(p_, word, size) != 0)
            return false;
        p_ += size;
        return true;
    }

    // A JSON string as UTF-8, in place of `out`'s text.
    void string(std::string& out) {
        out.clear();
        append_string(out);
    }

    // A JSON string as UTF-8, after `out`'s text.
    void append_string(std::string& out) {
        expect('"');
        for (;;) {
            const char* plain = p_;  // a run of ASCII that needs no decoding
            while (p_ < end_ && static_cast<unsigned char>(*p_) >= 0x20 &&
                   static_cast<unsigned char>(*p_) < 0x80 && *p_ != '"' && *p_ != '\\')
                ++p_;
            out.append(plain, p_);
            if (p_ == end_) throw Declined();
            const unsigned char c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                ++p_;
                return;
            }
            if (c < 0x20) throw Declined();
            if (c == '\\') {
                escape(out);
            } else {
                utf8_sequence(out);
            }
        }
    }

    // The text of a JSON number, checked against JSON's grammar; `integral` if it has
    // neither a fraction nor an exponent.
    std::string_view number(bool& integral) {
        space();
        const char* start = p_;
        integral = true;
        if (p_ < end_ && *p_ == '-') ++p_;
        if (p_ < end_ && *p_ == '0') {
            ++p_;
        } else if (!digits()) {
            throw Declined();
        }
        if (p_ < end_ && *p_ == '.') {
            ++p_;
            integral = false;
            if (!digits()) throw Declined();
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            integral = false;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (!digits()) throw Declined();
        }
        return std::string_view(start, static_cast<size_t>(p_ - start));
    }

    // Any JSON value, checked and passed over.
    void skip_value(int depth) {
        if (depth > MAX_DEPTH) throw Declined();
        space();
        const char c = peek();
        std::string scratch;
        bool integral;
        if (c == '"') {
            string(scratch);
        } else if (c == '{') {
            ++p_;
            if (take('}')) return;
            do {
                string(scratch);
                expect(':');
                skip_value(depth + 1);
            } while (take(','));
            expect('}');
        } else if (c == '[') {
            ++p_;
            if (take(']')) return;
            do skip_value(depth + 1);
            while (take(','));
            expect(']');
        } else if (!(literal("true") || literal("false") || literal("null"))) {
            number(integral);
        }
    }

  private:
    bool digits() {
        const char* start = p_;
        while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        return p_ > start;
    }

    void append_code_point(uint32_t cp, std::string& out) {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    uint32_t hex4() {
        if (end_ - p_ < 4) throw Declined();
        uint32_t value = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = *p_++;
            value <<= 4;
            if (c >= '0' && c <= '9') value |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') value |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') value |= static_cast<uint32_t>(c - 'A' + 10);
            else throw Declined();
        }
        return value;
    }

    void escape(std::string& out) {
        ++p_;  // the backslash
        if (p_ == end_) throw Declined();
        const char c = *p_++;
        switch (c) {
            case '"': out.push_back('"'); return;
            case '\\': out.push_back('\\'); return;
            case '/': out.push_back('/'); return;
            case 'b': out.push_back('\b'); return;
            case 'f': out.push_back('\f'); return;
            case 'n': out.push_back('\n'); return;
            case 'r': out.push_back('\r'); return;
            case 't': out.push_back('\t'); return;
            case 'u': break;
            default: throw Declined();
        }
        uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) throw Declined();  // a lone low surrogate
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') throw Declined();
            p_ += 2;
            const uint32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) throw Declined();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_code_point(cp, out);
    }

    // One multi-byte UTF-8 sequence, checked strictly (no overlong forms, no
    // surrogates, nothing beyond U+10FFFF).
    void utf8_sequence(std::string& out) {
        const unsigned char c = static_cast<unsigned char>(*p_);
        int size;
        uint32_t minimum;
        if (c >= 0xC2 && c <= 0xDF) {
            size = 2;
            minimum = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            size = 3;
            minimum = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            size = 4;
            minimum = 0x10000;
        } else {
            throw Declined();
        }
        if (end_ - p_ < size) throw Declined();
        uint32_t cp = c & (0xFF >> (size + 1));
        for (int i = 1; i < size; ++i) {
            const unsigned char next = static_cast<unsigned char>(p_[i]);
            if ((next & 0xC0) != 0x80) throw Declined();
            cp = (cp << 6) | (next & 0x3F);
        }
        if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) throw Declined();
        out.append(p_, static_cast<size_t>(size));
        p_ += size;
    }

    const char* p_;
    const char* end_;
};

// Code points in UTF-8 text.
size_t code_points(const std::string& text) {
    size_t count = 0;
    for (const char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return count;
}

// The byte offset of code point `index` in UTF-8 text (its size if beyond).
size_t offset_of(const std::string& text, size_t index) {
    size_t seen = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            if (seen == index) return i;
            ++seen;
        }
    }
    return text.size();
}

// One event's fields as the statistics read them. The completions' strings lie end to
// end in one buffer, which, like every field, keeps its memory from event to event.
struct Event {
    bool select = true;
    bool has_target = false;
    std::string target;
    Key user, message, token;
    bool has_completions = false;
    std::string completion_text;
    std::vector<size_t> completion_ends;  // completion k is text[ends[k-1], ends[k])
    std::vector<size_t> list_ends;        // list i holds completions [ends[i-1], ends[i])
    double logp = std::numeric_limits<double>::quiet_NaN();

    void clear() {
        select = true;
        has_target = has_completions = false;
        user = message = token = Key();
        completion_text.clear();
        completion_ends.clear();
        list_ends.clear();
        logp = std::numeric_limits<double>::quiet_NaN();
    }
    size_t lists() const { return list_ends.size(); }
    size_t list_size(size_t i) const { return list_ends[i] - (i ? list_ends[i - 1] : 0); }
    std::string_view completion(size_t i, size_t j) const {
        const size_t k = (i ? list_ends[i - 1] : 0) + j;
        const size_t begin = k ? completion_ends[k - 1] : 0;
        return std::string_view(completion_text).substr(begin, completion_ends[k] - begin);
    }
};

// A JSON number's value, correctly rounded as Python's float() rounds it.
double to_double(std::string_view digits) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    double value;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(),
                                              value);
    if (error == std::errc::result_out_of_range) throw Declined();  // msgspec refuses it
    if (error != std::errc() || end != digits.data() + digits.size()) throw Declined();
    return value;
#else
    const std::string text(digits);
    const PyGILState_STATE state = PyGILState_Ensure();  // event_columns released it
    const double value = PyOS_string_to_double(text.c_str(), nullptr, nullptr);
    const bool failed = value == -1.0 && PyErr_Occurred();
    if (failed) PyErr_Clear();
    PyGILState_Release(state);
    if (failed) throw Declined();
    return value;
#endif
}

void read_key(LineReader& reader, Key& key) {
    reader.space();
    key = Key();
    const char c = reader.peek();
    if (c == '"') {
        key.kind = Key::Text;
        reader.string(key.text);
    } else if (reader.literal("null")) {
        key.kind = Key::Null;
    } else if (reader.literal("true") || reader.literal("false")) {
        key.kind = Key::Integer;  // a bool, equal to 1 or 0 as in Python
        key.is_bool = true;
        key.integer = c == 't';
    } else {
        bool integral;
        const std::string_view digits = reader.number(integral);
        if (!integral) throw Declined();  // a float is not a key: msgspec says so
        int64_t value;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(),
                                                  value);
        if (error != std::errc() || end != digits.data() + digits.size()) throw Declined();
        key.kind = Key::Integer;
        key.integer = value;
    }
}

// An event line into `event`; Declined for anything but a plain event.
void read_event(LineReader& reader, Event& event, std::string& name) {
    event.clear();
    unsigned seen = 0;  // a bit per known field, to decline duplicates
    reader.expect('{');
    if (reader.take('}')) throw Declined();  // no target
    do {
        reader.string(name);
        reader.expect(':');
        reader.space();
        unsigned bit = 0;
        using namespace std::literals;
        const std::string_view field = name;
        if (field == "target"sv) {
            bit = 1;
            reader.string(event.target);
            event.has_target = true;
        } else if (field == "user"sv || field == "message"sv || field == "token"sv) {
            bit = field == "user"sv ? 2 : field == "message"sv ? 4 : 8;
            Key& key = field == "user"sv ? event.user : field == "message"sv ? event.message
                                                                         : event.token;
            read_key(reader, key);
        } else if (field == "completions"sv) {
            bit = 16;
            if (!reader.literal("null")) {
                event.has_completions = true;
                reader.expect('[');
                do {
                    reader.expect('[');
                    if (!reader.take(']')) {
                        do {
                            reader.append_string(event.completion_text);
                            event.completion_ends.push_back(event.completion_text.size());
                        } while (reader.take(','));
                        reader.expect(']');
                    }
                    event.list_ends.push_back(event.completion_ends.size());
                } while (reader.take(','));
                reader.expect(']');
            }
        } else if (field == "logp"sv) {
            bit = 32;
            if (!reader.literal("null")) {
                bool integral;
                const double value = to_double(reader.number(integral));
                if (!std::isfinite(value)) throw Declined();
                event.logp = value;
            }
        } else if (field == "select"sv) {
            bit = 64;
            if (reader.literal("true")) event.select = true;
            else if (reader.literal("false")) event.select = false;
            else throw Declined();
        } else if (field == "results"sv) {
            bit = 128;
            if (!reader.literal("null")) throw Declined();  // reranking: msgspec's way
        } else {
            reader.skip_value(1);
        }
        if (seen & bit) throw Declined();
        seen |= bit;
    } while (reader.take(','));
    reader.expect('}');
    reader.space();
    if (!reader.at_end() || !event.has_target) throw Declined();
}

// The rank and completion start of `rank_and_start`, on UTF-8 strings.
void event_rank(const Event& event, int64_t& rank, int64_t& start) {
    rank = 0;
    start = -1;
    if (!event.has_completions) return;
    for (size_t j = 0; j < event.list_size(0); ++j) {
        if (event.completion(0, j) == event.target) {
            rank = static_cast<int64_t>(j) + 1;
            break;
        }
    }
    if (rank > 0 && rank <= COMPLETION_MAX_RANK) {
        start = 0;
        return;
    }
    for (size_t i = 1; i < event.lists(); ++i) {
        const std::string_view tail = std::string_view(event.target).substr(
            offset_of(event.target, i));
        const size_t top = std::min<size_t>(event.list_size(i), COMPLETION_MAX_RANK);
        for (size_t j = 0; j < top; ++j) {
            if (event.completion(i, j) == tail) {
                start = static_cast<int64_t>(i);
                return;
            }
        }
    }
}

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
