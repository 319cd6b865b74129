// LM Challenge log events as the statistics read them: keys (users, messages, tokens),
// one event's fields from a JSON line, and the rank of its target among its
// completions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "jsonl.hpp"
#include "md5.hpp"

namespace lmlog {

const int64_t COMPLETION_MAX_RANK = 2;  // lmc's: the top two completions count

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

// Code points in UTF-8 text.
inline size_t code_points(const std::string& text) {
    size_t count = 0;
    for (const char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return count;
}

// The byte offset of code point `index` in UTF-8 text (its size if beyond).
inline size_t offset_of(const std::string& text, size_t index) {
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

// A key (null, an integer or a string) into `key`; Declined for anything else.
void read_key(LineReader& reader, Key& key);

// An event line into `event`; Declined for anything but a plain event.
void read_event(LineReader& reader, Event& event, std::string& name);

// The rank (1-based, 0 if absent) of the target among the first completions, and how
// many characters were typed before the rest of the word was among the top two (-1 if
// never), on UTF-8 strings.
void event_rank(const Event& event, int64_t& rank, int64_t& start);

}  // namespace lmlog
