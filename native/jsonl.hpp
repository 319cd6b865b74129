// A reader of one line of JSON, as evalproto's LM Challenge reader takes it: plain
// objects of plain fields. Anything it does not take throws Declined, and the caller
// leaves the whole chunk to msgspec (see lmlog.cpp).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace lmlog {

const int MAX_DEPTH = 64;

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

// A JSON number's value, correctly rounded as Python's float() rounds it.
double to_double(std::string_view digits);

}  // namespace lmlog
