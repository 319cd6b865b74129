// chrF's segment statistics, as sacrebleu's CHRF._extract_corpus_statistics.
//
// Per segment, the hypothesis' character n-grams (and word n-grams, for chrF++) go
// into tables; each reference is streamed through them. Its matches are the sum over
// n-grams of min(hyp count, ref count): the k-th occurrence of an n-gram in the
// reference is a match exactly when k <= its hyp count. The segment keeps the
// statistics of the reference with the best F, computed as sacrebleu computes it.
#include <algorithm>

#include "kernels.hpp"

namespace evalproto {

namespace {

// string.punctuation, which chrF++ splits off the ends of words.
inline bool is_punctuation(cp_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

}  // namespace

// sacrebleu's CHRF._remove_punctuation: the words of str.split(), with a punctuation
// mark split off the end, else off the start, of each word longer than one character.
void words_of(const std::vector<cp_t>& text, Tokens& words, Tokens& out) {
    words.clear();
    out.clear();
    split_whitespace(text.data(), text.size(), words);
    for (size_t t = 0; t < words.size(); ++t) {
        const cp_t* w = words.begin_of(t);
        size_t n = words.length_of(t);
        auto emit = [&](const cp_t* s, size_t len) {
            out.chars.insert(out.chars.end(), s, s + len);
            out.ends.push_back(static_cast<uint32_t>(out.chars.size()));
        };
        if (n > 1 && is_punctuation(w[n - 1])) {
            emit(w, n - 1);
            emit(w + n - 1, 1);
        } else if (n > 1 && is_punctuation(w[0])) {
            emit(w, 1);
            emit(w + 1, n - 1);
        } else {
            emit(w, n);
        }
    }
}

// The characters chrF counts: all of them with `whitespace`, else those that
// ''.join(text.split()) keeps.
void characters_of(const std::vector<cp_t>& text, bool whitespace, std::vector<cp_t>& out) {
    if (whitespace) {
        out = text;
        return;
    }
    out.resize(text.size());  // room for all: written through a pointer, without a check each
    cp_t* to = out.data();
    for (cp_t c : text) {
        *to = c;
        to += !is_space(c);
    }
    out.resize(static_cast<size_t>(to - out.data()));
}

// sacrebleu's CHRF._compute_f_score, with its float operations in its order: the
// operands are the same doubles and IEEE arithmetic rounds each operation alike
// (the build turns off contraction into fused multiply-adds).
double f_score(const double* stats, int orders, long long beta, bool eps_smoothing) {
    const double eps = 1e-16;
    const long long factor_int = beta * beta;
    const double factor = static_cast<double>(factor_int);
    const double one_plus_factor = static_cast<double>(1 + factor_int);
    double score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
    int effective_order = 0;
    for (int i = 0; i < orders; ++i) {
        double n_hyp = stats[3 * i], n_ref = stats[3 * i + 1], n_match = stats[3 * i + 2];
        double prec = n_hyp > 0 ? n_match / n_hyp : eps;
        double rec = n_ref > 0 ? n_match / n_ref : eps;
        double denom = factor * prec + rec;
        score += denom > 0 ? one_plus_factor * prec * rec / denom : eps;
        if (n_hyp > 0 && n_ref > 0) {
            avg_prec += prec;
            avg_rec += rec;
            ++effective_order;
        }
    }
    if (eps_smoothing) return 100 * score / orders;
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= effective_order;
        avg_rec /= effective_order;
    }
    if (avg_prec + avg_rec != 0.0) {
        score = one_plus_factor * avg_prec * avg_rec;
        score /= (factor * avg_prec) + avg_rec;
        return 100 * score;
    }
    return 0.0;
}

void chrf_rows(const Batch<TextRef>& batch, const ChrfOptions& options, double* out,
               size_t begin, size_t end) {
    const int C = options.char_order, W = options.word_order, orders = C + W;
    const size_t width = 3 * static_cast<size_t>(orders);
    std::vector<cp_t> text, chars;
    Tokens split, words;
    Interner interner;
    PrefixTable char_table, word_table;
    std::vector<uint32_t> ids;
    std::vector<double> stats(width), best_stats(width);
    std::vector<long long> matches(static_cast<size_t>(orders));
    for (size_t s = begin; s < end; ++s) {
        text.clear();
        append_code_points(batch.hyps[s], text);
        characters_of(text, options.whitespace, chars);
        const size_t hyp_chars = chars.size();
        if (C) char_table.build(chars.data(), chars.size(), C);
        size_t hyp_words = 0;
        if (W) {
            words_of(text, split, words);
            hyp_words = words.size();
            interner.reset(hyp_words);
            ids.resize(hyp_words);
            for (size_t t = 0; t < hyp_words; ++t)
                ids[t] = interner.add(words.begin_of(t), words.length_of(t));
            word_table.build(ids.data(), ids.size(), W);
        }
        double best_f = -1.0;
        for (size_t r = batch.ref_start[s]; r < batch.ref_start[s + 1]; ++r) {
            const int32_t ref_number = static_cast<int32_t>(r);
            // Matches per order, orders of words after those of characters: counted as
            // integers, stored in the row once the reference is done.
            std::fill(matches.begin(), matches.end(), 0);
            text.clear();
            append_code_points(batch.refs[r], text);
            if (C) {
                characters_of(text, options.whitespace, chars);
                char_table.visit(chars.data(), chars.size(), C, ref_number, matches.data());
                for (int n = 1; n <= C; ++n) {
                    long long ref_total = ngrams_in(chars.size(), n);
                    // sacrebleu counts no hypothesis n-grams of an order the
                    // reference has none of.
                    stats[3 * (n - 1)] = ref_total ? static_cast<double>(ngrams_in(hyp_chars, n)) : 0.0;
                    stats[3 * (n - 1) + 1] = static_cast<double>(ref_total);
                    stats[3 * (n - 1) + 2] = static_cast<double>(matches[n - 1]);
                }
            }
            if (W) {
                words_of(text, split, words);
                ids.resize(words.size());
                for (size_t t = 0; t < words.size(); ++t)
                    ids[t] = interner.find(words.begin_of(t), words.length_of(t));
                word_table.visit(ids.data(), ids.size(), W, ref_number, matches.data() + C);
                for (int n = 1; n <= W; ++n) {
                    long long ref_total = ngrams_in(words.size(), n);
                    stats[3 * (C + n - 1)] = ref_total ? static_cast<double>(ngrams_in(hyp_words, n)) : 0.0;
                    stats[3 * (C + n - 1) + 1] = static_cast<double>(ref_total);
                    stats[3 * (C + n - 1) + 2] = static_cast<double>(matches[C + n - 1]);
                }
            }
            // sacrebleu keeps the first reference whose F beats all earlier ones (F is
            // never NaN, so the first reference always beats the initial -1).
            double f = f_score(stats.data(), orders, options.beta, options.eps_smoothing);
            if (f > best_f || r == batch.ref_start[s]) {
                best_f = f;
                best_stats = stats;
            }
        }
        std::copy(best_stats.begin(), best_stats.end(), out + s * width);
    }
}

}  // namespace evalproto
