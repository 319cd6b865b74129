// Code points, sacrebleu's 13a and char tokenizers, and the per-segment hash tables.
#include "text.hpp"

#include <algorithm>

namespace evalproto {

void append_code_points(const TextRef& text, std::vector<cp_t>& out) {
    size_t at = out.size();
    out.resize(at + text.length);
    cp_t* to = out.data() + at;
    switch (text.kind) {
        case 1: {
            const uint8_t* from = static_cast<const uint8_t*>(text.data);
            for (size_t i = 0; i < text.length; ++i) to[i] = from[i];
            break;
        }
        case 2: {
            const uint16_t* from = static_cast<const uint16_t*>(text.data);
            for (size_t i = 0; i < text.length; ++i) to[i] = from[i];
            break;
        }
        default:
            std::memcpy(to, text.data, text.length * sizeof(cp_t));
    }
}

void split_whitespace(const cp_t* s, size_t n, Tokens& out) {
    size_t at = out.chars.size();
    out.chars.resize(at + n);  // room for every character: written without a check each
    cp_t* chars = out.chars.data();
    size_t i = 0;
    while (i < n) {
        while (i < n && is_space(s[i])) ++i;
        if (i == n) break;
        while (i < n && !is_space(s[i])) chars[at++] = s[i++];
        out.ends.push_back(static_cast<uint32_t>(at));
    }
    out.chars.resize(at);
}

void tokenize_char(const cp_t* s, size_t n, Tokens& out) {
    for (size_t i = 0; i < n; ++i) {
        if (is_space(s[i])) continue;
        out.chars.push_back(s[i]);
        out.ends.push_back(static_cast<uint32_t>(out.chars.size()));
    }
}

namespace {

// from = str.replace(pattern, replacement) into `to`: non-overlapping occurrences,
// left to right, as Python finds them.
void replace_all(const std::vector<cp_t>& from, const char* pattern, const char* replacement,
                 std::vector<cp_t>& to) {
    size_t p = std::strlen(pattern), r = std::strlen(replacement), n = from.size();
    to.clear();
    size_t i = 0;
    while (i < n) {
        if (from[i] == static_cast<unsigned char>(pattern[0]) && i + p <= n) {
            size_t k = 1;
            while (k < p && from[i + k] == static_cast<unsigned char>(pattern[k])) ++k;
            if (k == p) {
                for (size_t c = 0; c < r; ++c) to.push_back(static_cast<unsigned char>(replacement[c]));
                i += p;
                continue;
            }
        }
        to.push_back(from[i++]);
    }
}

// The class of sacrebleu's first 13a rule, r'([\{-\~\[-\` -\&\(-\+\:-\@\/])': each of
// these characters gets a space on both sides.
inline bool spaced_by_first_rule(cp_t c) {
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

inline bool period_or_comma(cp_t c) { return c == '.' || c == ','; }

}  // namespace

void tokenize_13a(const cp_t* s, size_t n, Scratch13a& scratch, Tokens& out) {
    // sacrebleu tokenizes line.rstrip(); rstrip() strips what split() splits on.
    while (n > 0 && is_space(s[n - 1])) --n;
    std::vector<cp_t>& a = scratch.a;
    std::vector<cp_t>& b = scratch.b;
    // A pass is skipped when the line lacks the characters it rewrites: then it is
    // the identity. No pass adds characters that an earlier skip looked for.
    bool angle = false, newline = false, ampersand = false, period = false, dash = false;
    for (size_t i = 0; i < n; ++i) {
        const cp_t c = s[i];
        angle |= c == '<';
        newline |= c == '\n';
        ampersand |= c == '&';
        period |= c == '.' || c == ',';
        dash |= c == '-';
    }
    b.assign(s, s + n);
    // Tokenizer13a's string replacements, each a full pass over the previous result,
    // in its order (so "&amp;lt;" becomes "<", but "&amp;quot;" stays "&quot;").
    if (angle) {
        replace_all(b, "<skipped>", "", a);
        a.swap(b);
    }
    if (newline) {
        replace_all(b, "-\n", "", a);
        replace_all(a, "\n", " ", b);
    }
    if (ampersand) {
        replace_all(b, "&quot;", "\"", a);
        replace_all(a, "&amp;", "&", b);
        replace_all(b, "&lt;", "<", a);
        replace_all(a, "&gt;", ">", b);
    }
    // TokenizerRegexp gets f' {line} '; its first rule spaces a class of ASCII
    // punctuation (the space itself included) wherever it occurs. Each pass writes into
    // a buffer sized for its longest result, through a pointer.
    a.resize(3 * b.size() + 2);
    cp_t* to = a.data();
    *to++ = ' ';
    for (cp_t c : b) {
        if (spaced_by_first_rule(c)) {
            to[0] = ' ';
            to[1] = c;
            to[2] = ' ';
            to += 3;
        } else {
            *to++ = c;
        }
    }
    *to++ = ' ';
    a.resize(static_cast<size_t>(to - a.data()));
    // The next three rules match two characters each; re.sub takes the leftmost
    // match, then goes on after it, so a character consumed as the second of a match
    // cannot start the next one. [^0-9] is any code point but an ASCII digit.
    if (period) {
        // r'([^0-9])([\.,])' -> r'\1 \2 '
        b.resize(2 * a.size());
        to = b.data();
        for (size_t i = 0; i < a.size();) {
            if (i + 1 < a.size() && !is_ascii_digit(a[i]) && period_or_comma(a[i + 1])) {
                to[0] = a[i];
                to[1] = ' ';
                to[2] = a[i + 1];
                to[3] = ' ';
                to += 4;
                i += 2;
            } else {
                *to++ = a[i++];
            }
        }
        b.resize(static_cast<size_t>(to - b.data()));
        // r'([\.,])([^0-9])' -> r' \1 \2'
        a.resize(2 * b.size());
        to = a.data();
        for (size_t i = 0; i < b.size();) {
            if (i + 1 < b.size() && period_or_comma(b[i]) && !is_ascii_digit(b[i + 1])) {
                to[0] = ' ';
                to[1] = b[i];
                to[2] = ' ';
                to[3] = b[i + 1];
                to += 4;
                i += 2;
            } else {
                *to++ = b[i++];
            }
        }
        a.resize(static_cast<size_t>(to - a.data()));
    }
    if (dash) {
        // r'([0-9])(-)' -> r'\1 \2 '
        b.resize(2 * a.size());
        to = b.data();
        for (size_t i = 0; i < a.size();) {
            if (i + 1 < a.size() && is_ascii_digit(a[i]) && a[i + 1] == '-') {
                to[0] = a[i];
                to[1] = ' ';
                to[2] = '-';
                to[3] = ' ';
                to += 4;
                i += 2;
            } else {
                *to++ = a[i++];
            }
        }
        b.resize(static_cast<size_t>(to - b.data()));
        a.swap(b);
    }
    // ' '.join(line.split()), then BLEU's own split(): the words of line.split().
    split_whitespace(a.data(), a.size(), out);
}

uint32_t Interner::lookup(const cp_t* s, size_t n, bool insert) {
    uint64_t h = hash_symbols(s, n);
    uint32_t* slot = slots_.probe(h, [&](uint32_t e) {
        const Entry& entry = entries_[e];
        return entry.hash == h && entry.length == n &&
               same_symbols(chars_.data() + entry.start, s, n);
    });
    if (*slot) return *slot - 1;
    if (!insert) return UNKNOWN;
    if (2 * (entries_.size() + 1) + 2 > slots_.capacity()) {
        // More tokens than expected: rehash into a table twice the size.
        slots_.reset(2 * entries_.size() + 2);
        for (size_t e = 0; e < entries_.size(); ++e)
            *slots_.probe(entries_[e].hash, [](uint32_t) { return false; }) = static_cast<uint32_t>(e + 1);
        slot = slots_.probe(h, [](uint32_t) { return false; });
    }
    entries_.push_back({h, static_cast<uint32_t>(chars_.size()), static_cast<uint32_t>(n)});
    chars_.insert(chars_.end(), s, s + n);
    *slot = static_cast<uint32_t>(entries_.size());
    return *slot - 1;
}

}  // namespace evalproto
