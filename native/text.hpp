// Text, tokens and hash tables shared by the kernels.
//
// Everything here works on Unicode code points (uint32), which is what Python's str
// indexes: sacrebleu's character n-grams, its len(word) and its regular expressions
// all count code points. Nothing here touches Python objects, so the kernels can run
// with the GIL released; the only CPython call is Py_UNICODE_ISSPACE, a pure table
// lookup, used so that "whitespace" is exactly what str.split() of the running
// interpreter splits on.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

namespace evalproto {

using cp_t = uint32_t;

// A str's characters as CPython stores them: 1, 2 or 4 bytes per code point. The
// module keeps a reference to each str for as long as a kernel reads it.
struct TextRef {
    const void* data = nullptr;
    int kind = 1;
    size_t length = 0;
};

// Appends the code points of `text` to `out`.
void append_code_points(const TextRef& text, std::vector<cp_t>& out);

inline bool is_space(cp_t c) {
    // Python's str.split() and str.isspace(): the ASCII whitespace (with \x1c-\x1f)
    // and, above 127, the Unicode database's whitespace (\x85, \xa0, \u1680, ...).
    return Py_UNICODE_ISSPACE(static_cast<Py_UCS4>(c));
}

inline bool is_ascii_digit(cp_t c) { return c >= '0' && c <= '9'; }

// Whether a[0, n) == b[0, n): tokens and n-grams are a few symbols long, shorter than
// what a call of memcmp is worth.
inline bool same_symbols(const uint32_t* a, const uint32_t* b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

// Tokens end to end: token t is chars[ends[t-1] .. ends[t]).
struct Tokens {
    std::vector<cp_t> chars;
    std::vector<uint32_t> ends;

    void clear() {
        chars.clear();
        ends.clear();
    }
    size_t size() const { return ends.size(); }
    const cp_t* begin_of(size_t t) const { return chars.data() + (t ? ends[t - 1] : 0); }
    size_t length_of(size_t t) const { return ends[t] - (t ? ends[t - 1] : 0); }
};

// Appends the whitespace-separated words of s[0, n) to `out`, as str.split() finds them.
void split_whitespace(const cp_t* s, size_t n, Tokens& out);

// Scratch buffers for the 13a tokenizer, kept between segments.
struct Scratch13a {
    std::vector<cp_t> line, a, b;
};

// The tokens of sacrebleu's Tokenizer13a()(line.rstrip()).split().
void tokenize_13a(const cp_t* s, size_t n, Scratch13a& scratch, Tokens& out);

// The tokens of TokenizerChar()(line.rstrip()).split(): every non-space character.
void tokenize_char(const cp_t* s, size_t n, Tokens& out);

// 64-bit hashing of sequences of 32-bit symbols, element by element, so that the
// hash of an n-gram extends the hash of its (n-1)-gram prefix.
constexpr uint64_t HASH_SEED = 0x243F6A8885A308D3ULL;
inline uint64_t hash_step(uint64_t h, uint32_t x) {
    h = (h ^ (x + 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 31);
}
inline uint64_t hash_symbols(const uint32_t* s, size_t n) {
    uint64_t h = HASH_SEED;
    for (size_t i = 0; i < n; ++i) h = hash_step(h, s[i]);
    return h;
}

// Open addressing with linear probing over indices of entries kept elsewhere; slot
// value 0 is empty, v > 0 is entry v - 1. Sized once per segment for the entries it
// will hold, at most half full.
class Slots {
  public:
    void reset(size_t entries) {
        size_t capacity = 16;
        while (capacity < 2 * entries + 2) capacity <<= 1;
        slots_.assign(capacity, 0);
        mask_ = capacity - 1;
    }
    // The slot where the entry with this hash and `equal(entry)` is, or the empty slot
    // where it would go.
    size_t capacity() const { return slots_.size(); }
    template <class Equal>
    uint32_t* probe(uint64_t hash, Equal equal) {
        size_t at = static_cast<size_t>((hash * 0xD6E8FEB86659FD93ULL) >> 20) & mask_;
        while (true) {
            uint32_t* slot = &slots_[at];
            if (*slot == 0 || equal(*slot - 1)) return slot;
            at = (at + 1) & mask_;
        }
    }

  private:
    std::vector<uint32_t> slots_;
    size_t mask_ = 0;
};

constexpr uint32_t UNKNOWN = 0xFFFFFFFFu;

// Token text -> a small id, per segment. The hypothesis' tokens are added; the
// references' tokens are only looked up, and a token the hypothesis lacks is UNKNOWN,
// which no n-gram of the hypothesis contains.
class Interner {
  public:
    void reset(size_t expected) {
        slots_.reset(expected);
        entries_.clear();
        chars_.clear();
    }
    uint32_t add(const cp_t* s, size_t n) { return lookup(s, n, true); }
    uint32_t find(const cp_t* s, size_t n) { return lookup(s, n, false); }
    uint32_t size() const { return static_cast<uint32_t>(entries_.size()); }

  private:
    struct Entry {
        uint64_t hash;
        uint32_t start, length;
    };
    uint32_t lookup(const cp_t* s, size_t n, bool insert);

    Slots slots_;
    std::vector<Entry> entries_;
    std::vector<cp_t> chars_;
};

// The n-grams (orders 1..max_order) of one side of a segment, each with a limit: its
// occurrences in a hypothesis (chrF, `build`), or its most occurrences in any one of a
// segment's references (BLEU, `add`). The other side is then streamed through `visit`:
// the k-th occurrence of an n-gram in it matches exactly when k <= the limit, so the
// matches of an order add up to the sum over n-grams of min(their counts on each side),
// which is what both metrics clip to.
//
// An n-gram is its (n-1)-gram prefix's slot and its last symbol: one 64-bit key, so that
// a probe compares two integers, and an n-gram whose prefix is absent is absent too
// (each start stops at its first miss). A slot holds its n-gram's counts itself (one
// memory access a probe). The table keeps its memory from segment to segment and tells
// the current segment's slots by a stamp: nothing is cleared.
class PrefixTable {
  public:
    // The n-grams (orders 1..max_order) of s[0, n), each limited by its count.
    void build(const uint32_t* s, size_t n, int max_order) {
        const size_t orders = static_cast<size_t>(max_order);
        clear(n * (orders < n ? orders : n));
        insert(s, n, max_order, [](Slot& slot) { ++slot.limit; });
    }

    // A table of the n-grams of several sequences instead: `clear` for room for
    // `expected` n-grams, then `add` each sequence (numbered 0, 1, ...); an n-gram's
    // limit is its most occurrences in any one sequence.
    void clear(size_t expected) { reset(expected); }
    void add(const uint32_t* s, size_t n, int max_order, int32_t sequence) {
        insert(s, n, max_order, [sequence](Slot& slot) {
            if (++seen_in(slot, sequence) > slot.limit) slot.limit = slot.seen;
        });
    }

    // Adds to matches[order - 1] the occurrences of n-grams in s[0, n) (orders up to
    // max_order) that are within their limits. `sequence` tells this sequence's counts
    // from earlier ones': a number that neither `add` nor the last `visit` took.
    void visit(const uint32_t* s, size_t n, int max_order, int32_t sequence,
               long long* matches) {
        const size_t orders = static_cast<size_t>(max_order);
        for (size_t i = 0; i < n; ++i) {
            const size_t longest = n - i < orders ? n - i : orders;
            uint64_t prefix = 0;
            for (size_t order = 1; order <= longest; ++order) {
                Slot* slot = probe((prefix << 32) | s[i + order - 1]);
                if (slot->stamp != stamp_) break;
                matches[order - 1] += ++seen_in(*slot, sequence) <= slot->limit;
                prefix = static_cast<uint64_t>(slot - slots_.data()) + 1;
            }
        }
    }

  private:
    struct Slot {
        uint64_t key;
        uint32_t stamp;
        int32_t limit;
        int32_t last;  // the sequence `seen` counts occurrences in
        int32_t seen;
    };

    // The slot's count of occurrences in `sequence`, restarted when it was another's.
    static int32_t& seen_in(Slot& slot, int32_t sequence) {
        if (slot.last != sequence) {
            slot.last = sequence;
            slot.seen = 0;
        }
        return slot.seen;
    }

    // Each n-gram occurrence of s[0, n) gets its slot (new, with no counts, at its first
    // occurrence) and count(slot).
    template <class Count>
    void insert(const uint32_t* s, size_t n, int max_order, Count count) {
        const size_t orders = static_cast<size_t>(max_order);
        for (size_t i = 0; i < n; ++i) {
            const size_t longest = n - i < orders ? n - i : orders;
            uint64_t prefix = 0;
            for (size_t order = 1; order <= longest; ++order) {
                const uint64_t key = (prefix << 32) | s[i + order - 1];
                Slot* slot = probe(key);
                if (slot->stamp != stamp_) *slot = {key, stamp_, 0, -1, 0};
                count(*slot);
                prefix = static_cast<uint64_t>(slot - slots_.data()) + 1;
            }
        }
    }

    void reset(size_t entries) {
        size_t capacity = 16;
        int bits = 4;
        while (capacity < 2 * entries + 2) {
            capacity <<= 1;
            ++bits;
        }
        if (slots_.size() < capacity) slots_.resize(capacity, Slot{0, 0, 0, -1, 0});
        mask_ = capacity - 1;
        shift_ = 64 - bits;
        if (++stamp_ == 0) {  // after 2^32 segments: every stamp could be current
            std::fill(slots_.begin(), slots_.end(), Slot{0, 0, 0, -1, 0});
            stamp_ = 1;
        }
    }

    // The slot of `key` in this segment, or the free slot where it would go.
    Slot* probe(uint64_t key) {
        size_t at = static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
        while (true) {
            Slot* slot = &slots_[at];
            if (slot->stamp != stamp_ || slot->key == key) return slot;
            at = (at + 1) & mask_;
        }
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    int shift_ = 60;
    uint32_t stamp_ = 0;
};

}  // namespace evalproto
