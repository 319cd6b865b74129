// Reading LM Challenge events from JSON lines (see lmevents.hpp).
#include "lmevents.hpp"

#include <algorithm>
#include <cmath>

namespace lmlog {

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

}  // namespace lmlog
