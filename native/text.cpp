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

// What a character is to the line's words once the first rule has spaced its class: a
// space, a token of its own (of the class), or part of a word (a run of neither, between
// spaces on that line), which only a period, a comma or a dash may split further.
enum Kind : uint8_t { SPACE, OF_THE_CLASS, IN_A_WORD, MAY_SPLIT };

// The kinds of ASCII characters, looked up: a line's characters are mostly ASCII.
struct AsciiKinds {
    Kind of[128];
    AsciiKinds() {
        for (cp_t c = 0; c < 128; ++c)
            of[c] = is_space(c)                       ? SPACE
                    : spaced_by_first_rule(c)          ? OF_THE_CLASS
                    : period_or_comma(c) || c == '-'   ? MAY_SPLIT
                                                       : IN_A_WORD;
    }
};
const AsciiKinds ascii_kinds;

inline Kind kind_of(cp_t c) {
    return c < 128 ? ascii_kinds.of[c] : is_space(c) ? SPACE : IN_A_WORD;
}

// The tokens of one such word, w[0, n), by the last three 13a rules. Each rule only
// inserts spaces, next to the two characters of each match, and a match reaches out of a
// word only to the space on either side of it (as [^0-9]), which " word " has too. Nor do
// the scans differ: the first and third rules consume a period, comma or dash as a
// match's second character, never a space, so each space is a place where a match may
// start; the second may consume the space after a word, where none of its matches can
// start. So each rule does to a word on the line what it does to " word " alone.
//
// The rules only insert spaces, so the tokens of a word are runs of its characters, in
// order: this adds their ends to `ends`, counted from `first`, where the word's first
// character is.
void split_word(const cp_t* w, size_t n, Scratch13a& scratch, size_t first,
                std::vector<uint32_t>& ends) {
    std::vector<cp_t>& a = scratch.a;
    std::vector<cp_t>& b = scratch.b;
    a.assign(1, ' ');
    a.insert(a.end(), w, w + n);
    a.push_back(' ');
    bool period = false, dash = false;
    for (size_t i = 0; i < n; ++i) {
        period |= period_or_comma(w[i]);
        dash |= w[i] == '-';
    }
    // The next three rules match two characters each; re.sub takes the leftmost
    // match, then goes on after it, so a character consumed as the second of a match
    // cannot start the next one. [^0-9] is any code point but an ASCII digit.
    if (period) {
        // r'([^0-9])([\.,])' -> r'\1 \2 '
        b.clear();
        for (size_t i = 0; i < a.size();) {
            if (i + 1 < a.size() && !is_ascii_digit(a[i]) && period_or_comma(a[i + 1])) {
                b.insert(b.end(), {a[i], ' ', a[i + 1], ' '});
                i += 2;
            } else {
                b.push_back(a[i++]);
            }
        }
        // r'([\.,])([^0-9])' -> r' \1 \2'
        a.clear();
        for (size_t i = 0; i < b.size();) {
            if (i + 1 < b.size() && period_or_comma(b[i]) && !is_ascii_digit(b[i + 1])) {
                a.insert(a.end(), {' ', b[i], ' ', b[i + 1]});
                i += 2;
            } else {
                a.push_back(b[i++]);
            }
        }
    }
    if (dash) {
        // r'([0-9])(-)' -> r'\1 \2 '
        b.clear();
        for (size_t i = 0; i < a.size();) {
            if (i + 1 < a.size() && is_ascii_digit(a[i]) && a[i + 1] == '-') {
                b.insert(b.end(), {a[i], ' ', '-', ' '});
                i += 2;
            } else {
                b.push_back(a[i++]);
            }
        }
        a.swap(b);
    }
    size_t end = first;
    bool in_token = false;  // " word " ends with a space, which ends the last token
    for (cp_t c : a) {
        if (c != ' ') {
            ++end;
            in_token = true;
        } else if (in_token) {
            ends.push_back(static_cast<uint32_t>(end));
            in_token = false;
        }
    }
}

}  // namespace

void tokenize_13a(const cp_t* s, size_t n, Scratch13a& scratch, Tokens& out) {
    // sacrebleu tokenizes line.rstrip(); rstrip() strips what split() splits on.
    while (n > 0 && is_space(s[n - 1])) --n;
    bool angle = false, newline = false, ampersand = false;
    for (size_t i = 0; i < n; ++i) {
        const cp_t c = s[i];
        angle |= c == '<';
        newline |= c == '\n';
        ampersand |= c == '&';
    }
    if (angle || newline || ampersand) {
        // Tokenizer13a's string replacements, each a full pass over the previous
        // result, in its order (so "&amp;lt;" becomes "<", but "&amp;quot;" stays
        // "&quot;"). A pass is skipped when the line lacks the characters it rewrites:
        // then it is the identity. No pass adds characters that an earlier skip looked for.
        std::vector<cp_t>& a = scratch.a;
        std::vector<cp_t>& b = scratch.line;
        b.assign(s, s + n);
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
        s = b.data();
        n = b.size();
    }
    // TokenizerRegexp's first rule spaces a class of ASCII punctuation (the space
    // itself included) wherever it occurs: each is a token, and so is each word
    // between them and the whitespace, unless split_word splits it further. No rule
    // drops or adds a character but whitespace, so the tokens' characters are the
    // line's, but whitespace, in order: written through a pointer.
    size_t written = out.chars.size();
    out.chars.resize(written + n);
    cp_t* const chars = out.chars.data();
    for (size_t i = 0; i < n;) {
        const Kind kind = kind_of(s[i]);
        if (kind == SPACE) {
            ++i;
        } else if (kind == OF_THE_CLASS) {
            chars[written++] = s[i++];
            out.ends.push_back(static_cast<uint32_t>(written));
        } else {
            const size_t begin = i, word = written;
            bool split = false;
            for (Kind in; i < n && (in = kind_of(s[i])) >= IN_A_WORD; ++i) {
                split |= in == MAY_SPLIT;
                chars[written++] = s[i];
            }
            if (split)
                split_word(s + begin, i - begin, scratch, word, out.ends);
            else
                out.ends.push_back(static_cast<uint32_t>(written));
        }
    }
    out.chars.resize(written);
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
