// BLEU's segment statistics, as sacrebleu's BLEU._extract_corpus_statistics.
//
// Per segment: the hypothesis' tokens get ids and its n-grams go into a table; each
// reference is then streamed through the table. A hypothesis n-gram's clipped count is
// min(hyp count, max over references of the reference count), which is the max over
// references of min(hyp count, reference count): counting a reference's occurrences
// one by one, the k-th occurrence adds one match exactly when k <= hyp count and k
// exceeds what an earlier reference already matched.
#include <algorithm>
#include <cstdlib>

#include "kernels.hpp"

namespace evalproto {

namespace {

void tokenize(const std::vector<cp_t>& text, Tokenizer tokenizer, Scratch13a& scratch,
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

}  // namespace

void bleu_rows(const Batch<TextRef>& batch, int max_order, Tokenizer tokenizer, double* out) {
    const size_t width = 2 + 2 * static_cast<size_t>(max_order);
    std::vector<cp_t> text;
    Scratch13a scratch;
    Tokens tokens;
    Interner interner;
    NgramTable table;
    std::vector<uint32_t> ids;
    std::vector<long long> correct(max_order);
    for (size_t s = 0; s < batch.segments(); ++s) {
        text.clear();
        append_code_points(batch.hyps[s], text);
        tokenize(text, tokenizer, scratch, tokens);
        const size_t hyp_len = tokens.size();
        interner.reset(hyp_len);
        ids.resize(hyp_len);
        for (size_t t = 0; t < hyp_len; ++t)
            ids[t] = interner.add(tokens.begin_of(t), tokens.length_of(t));
        table.build(ids.data(), ids.size(), max_order);
        std::fill(correct.begin(), correct.end(), 0);
        long long closest = -1, closest_diff = -1;
        for (size_t r = batch.ref_start[s]; r < batch.ref_start[s + 1]; ++r) {
            text.clear();
            append_code_points(batch.refs[r], text);
            tokenize(text, tokenizer, scratch, tokens);
            const long long ref_len = static_cast<long long>(tokens.size());
            // The closest reference length, the shorter of two equally close.
            long long diff = std::llabs(static_cast<long long>(hyp_len) - ref_len);
            if (closest_diff == -1 || diff < closest_diff) {
                closest_diff = diff;
                closest = ref_len;
            } else if (diff == closest_diff && ref_len < closest) {
                closest = ref_len;
            }
            ids.resize(tokens.size());
            for (size_t t = 0; t < tokens.size(); ++t)
                ids[t] = interner.find(tokens.begin_of(t), tokens.length_of(t));
            const int32_t ref_number = static_cast<int32_t>(r);
            table.visit(ids.data(), ids.size(), max_order, [&](NgramTable::Entry& e) {
                if (e.last_ref != ref_number) {
                    e.last_ref = ref_number;
                    e.ref_count = 0;
                }
                ++e.ref_count;
                if (e.ref_count <= e.hyp_count && e.ref_count > e.best) {
                    e.best = e.ref_count;
                    ++correct[e.order - 1];
                }
            });
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
