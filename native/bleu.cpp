// BLEU's segment statistics, as sacrebleu's BLEU._extract_corpus_statistics.
//
// Per segment: the references' tokens get ids and their n-grams go into a table, each
// with its most occurrences in any one reference; the hypothesis is then streamed
// through the table. A hypothesis n-gram's clipped count is min(hyp count, max over
// references of the reference count): counting the hypothesis' occurrences one by
// one, the k-th occurrence adds one match exactly when k <= that max. Consecutive
// segments with equal references (the systems of one segment, as corpus_rows sends
// them; an n-best list, as a tuner sends it) share one table.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels.hpp"

namespace evalproto {

void bleu_tokens(const std::vector<cp_t>& text, Tokenizer tokenizer, Scratch13a& scratch,
                 Tokens& out) {
    out.clear();
    switch (tokenizer) {
        case Tokenizer::T13a:
            tokenize_13a(text.data(), text.size(), scratch, out);
            break;
        case Tokenizer::Char:
            tokenize_char(text.data(), text.size(), out);
            break;
        case Tokenizer::None:
            split_whitespace(text.data(), text.size(), out);
            break;
    }
}

namespace {

// Whether segment s has the same references as segment s - 1: the same objects, or
// equal texts (equal str have equal kinds in CPython, so the bytes compare).
bool same_references(const Batch<TextRef>& batch, size_t s) {
    const size_t begin = batch.ref_start[s], count = batch.ref_start[s + 1] - begin;
    const size_t previous = batch.ref_start[s - 1];
    if (batch.ref_start[s] - previous != count) return false;
    for (size_t r = 0; r < count; ++r) {
        const TextRef &a = batch.refs[begin + r], &b = batch.refs[previous + r];
        if (a.kind != b.kind || a.length != b.length) return false;
        if (a.data != b.data &&
            std::memcmp(a.data, b.data, a.length * static_cast<size_t>(a.kind)) != 0)
            return false;
    }
    return true;
}

}  // namespace

void bleu_rows(const Batch<TextRef>& batch, int max_order, Tokenizer tokenizer, double* out,
               size_t begin, size_t end) {
    const size_t width = 2 + 2 * static_cast<size_t>(max_order);
    const size_t orders = static_cast<size_t>(max_order);
    std::vector<cp_t> text;
    Scratch13a scratch;
    Tokens tokens;
    Interner interner;
    PrefixTable table;
    std::vector<uint32_t> ids, ref_ids;
    std::vector<size_t> ref_ends;  // reference r's ids are ref_ids[ref_ends[r-1], ref_ends[r])
    std::vector<long long> correct(max_order);
    for (size_t s = begin; s < end; ++s) {
        if (s == begin || !same_references(batch, s)) {
            ref_ids.clear();
            ref_ends.clear();
            size_t characters = 0;
            for (size_t r = batch.ref_start[s]; r < batch.ref_start[s + 1]; ++r)
                characters += batch.refs[r].length;
            interner.reset(characters / 4);  // a guess at the words; it grows if need be
            size_t ngrams = 0;
            for (size_t r = batch.ref_start[s]; r < batch.ref_start[s + 1]; ++r) {
                text.clear();
                append_code_points(batch.refs[r], text);
                bleu_tokens(text, tokenizer, scratch, tokens);
                for (size_t t = 0; t < tokens.size(); ++t)
                    ref_ids.push_back(interner.add(tokens.begin_of(t), tokens.length_of(t)));
                ref_ends.push_back(ref_ids.size());
                ngrams += tokens.size() * std::min(orders, tokens.size());
            }
            table.clear(ngrams);
            for (size_t r = 0, begin = 0; r < ref_ends.size(); begin = ref_ends[r++]) {
                table.add(ref_ids.data() + begin, ref_ends[r] - begin, max_order,
                          static_cast<int32_t>(r));
            }
        }
        text.clear();
        append_code_points(batch.hyps[s], text);
        bleu_tokens(text, tokenizer, scratch, tokens);
        const size_t hyp_len = tokens.size();
        ids.resize(hyp_len);
        for (size_t t = 0; t < hyp_len; ++t)
            ids[t] = interner.find(tokens.begin_of(t), tokens.length_of(t));
        std::fill(correct.begin(), correct.end(), 0);
        table.visit(ids.data(), ids.size(), max_order, -2 - static_cast<int32_t>(s),
                    correct.data());  // -2 - s: not a reference's number
        // The closest reference length, the shorter of two equally close.
        long long closest = -1, closest_diff = -1;
        for (size_t r = 0, begin = 0; r < ref_ends.size(); begin = ref_ends[r++]) {
            const long long ref_len = static_cast<long long>(ref_ends[r] - begin);
            const long long diff = std::llabs(static_cast<long long>(hyp_len) - ref_len);
            if (closest_diff == -1 || diff < closest_diff) {
                closest_diff = diff;
                closest = ref_len;
            } else if (diff == closest_diff && ref_len < closest) {
                closest = ref_len;
            }
        }
        double* row = out + s * width;
        row[0] = static_cast<double>(hyp_len);
        row[1] = static_cast<double>(closest);
        for (int n = 0; n < max_order; ++n) {
            row[2 + n] = static_cast<double>(correct[n]);
            long long total = static_cast<long long>(hyp_len) - n;
            row[2 + max_order + n] = static_cast<double>(total > 0 ? total : 0);
        }
    }
}

}  // namespace evalproto
