// All-pairs sentence scores, for minimum Bayes risk decoding: every hypothesis of a
// batch against every reference of it, each cell sacrebleu's sentence score.
//
// Each text is read once: its symbols (chrF's characters and chrF++'s words, BLEU's
// tokens) become n-gram ids, exact and shared by the batch (an n-gram's id is that of
// its (n-1)-gram prefix and its last symbol, looked up in a table), and each order's
// distinct ids are kept with their counts, sorted. A pair's matches per order are then
// the sum over the n-grams both hold of the smaller count, which is what sacrebleu's
// Counters give for chrF's matches and BLEU's clipped counts against one reference.
// Only n-grams that some other text of the batch holds can match across texts, so only
// those are kept for the pairs; a text against itself matches every n-gram it has. The
// hypothesis' counts are spread over an array indexed by id, through which each
// reference's n-grams are streamed. When the references are the hypotheses
// (`symmetric`), a pair's matches serve both of its cells.
#include <algorithm>
#include <cmath>

#include "kernels.hpp"

namespace evalproto {

namespace {

// (prefix id + 1, symbol) -> a dense id, 0 for the first n-gram seen.
class NgramIds {
  public:
    NgramIds() { slots_.reset(1024); }
    uint32_t id(uint32_t prefix, uint32_t symbol) {
        const uint64_t key = (static_cast<uint64_t>(prefix) << 32) | symbol;
        const uint64_t h = hash_of(key);
        uint32_t* slot = slots_.probe(h, [&](uint32_t e) { return keys_[e] == key; });
        if (*slot) return *slot - 1;
        if (2 * (keys_.size() + 1) + 2 > slots_.capacity()) {
            slots_.reset(2 * keys_.size() + 2);
            for (size_t e = 0; e < keys_.size(); ++e)
                *slots_.probe(hash_of(keys_[e]), [](uint32_t) { return false; }) =
                    static_cast<uint32_t>(e + 1);
            slot = slots_.probe(h, [](uint32_t) { return false; });
        }
        keys_.push_back(key);
        *slot = static_cast<uint32_t>(keys_.size());
        return *slot - 1;
    }
    uint32_t size() const { return static_cast<uint32_t>(keys_.size()); }

  private:
    static uint64_t hash_of(uint64_t key) {
        return hash_step(hash_step(HASH_SEED, static_cast<uint32_t>(key >> 32)),
                         static_cast<uint32_t>(key));
    }
    Slots slots_;
    std::vector<uint64_t> keys_;
};

struct Count {
    uint32_t id, count;
};

// Scratch that one thread reuses from text to text.
struct TextScratch {
    std::vector<cp_t> text, chars;
    Tokens split, words;
    Scratch13a scratch13a;
    std::vector<uint32_t> ids;
    std::vector<uint32_t> occurrences;
};

// A metric's view of texts: up to two kinds of symbols, each with its n-gram orders.
// `symbols` puts a text's sequences into seqs[0], seqs[1]; `score` gives a cell's score
// from each kind's length in the hypothesis and the reference and the matches of each
// order (kind 0's orders first).
struct ChrfMetric {
    ChrfOptions options;
    int kinds() const { return options.word_order ? 2 : 1; }
    int orders(int kind) const { return kind ? options.word_order : options.char_order; }

    void symbols(const TextRef& text, Interner& words, TextScratch& s,
                 std::vector<uint32_t>* seqs) const {
        s.text.clear();
        append_code_points(text, s.text);
        characters_of(s.text, options.whitespace, s.chars);
        seqs[0].assign(s.chars.begin(), s.chars.end());
        if (options.word_order) {
            words_of(s.text, s.split, s.words);
            seqs[1].resize(s.words.size());
            for (size_t t = 0; t < s.words.size(); ++t)
                seqs[1][t] = words.add(s.words.begin_of(t), s.words.length_of(t));
        }
    }

    double score(const size_t* hyp_len, const size_t* ref_len, const long long* matches) const {
        double stats[3 * 64];
        int at = 0;
        for (int kind = 0; kind < kinds(); ++kind) {
            for (int n = 1; n <= orders(kind); ++n, ++at) {
                const long long ref_total = ngrams_in(ref_len[kind], n);
                // sacrebleu counts no hypothesis n-grams of an order the reference has none of.
                stats[3 * at] = ref_total ? static_cast<double>(ngrams_in(hyp_len[kind], n)) : 0.0;
                stats[3 * at + 1] = static_cast<double>(ref_total);
                stats[3 * at + 2] = static_cast<double>(matches[at]);
            }
        }
        return f_score(stats, at, options.beta, options.eps_smoothing);
    }
};

struct BleuMetric {
    BleuOptions options;
    int kinds() const { return 1; }
    int orders(int) const { return options.max_order; }

    void symbols(const TextRef& text, Interner& words, TextScratch& s,
                 std::vector<uint32_t>* seqs) const {
        s.text.clear();
        append_code_points(text, s.text);
        bleu_tokens(s.text, options.tokenizer, s.scratch13a, s.words);
        seqs[0].resize(s.words.size());
        for (size_t t = 0; t < s.words.size(); ++t)
            seqs[0][t] = words.add(s.words.begin_of(t), s.words.length_of(t));
    }

    double score(const size_t* hyp_len, const size_t* ref_len, const long long* matches) const {
        long long total[64];
        for (int n = 0; n < options.max_order; ++n) {
            const long long left = static_cast<long long>(hyp_len[0]) - n;
            total[n] = left > 0 ? left : 0;
        }
        return bleu_score(static_cast<long long>(hyp_len[0]), static_cast<long long>(ref_len[0]),
                          matches, total, options);
    }
};

template <class Metric>
class NgramPairwise : public Pairwise {
  public:
    NgramPairwise(const PairwiseBatches& input, Metric metric, size_t threads)
        : in_(input), metric_(metric), batches_(input.batches), dense_(threads),
          matches_(threads) {
        for (int kind = 0; kind < metric_.kinds(); ++kind)
            for (int n = 1; n <= metric_.orders(kind); ++n) kind_of_order_[orders_++] = kind;
    }

    void prepare(size_t, size_t b) override {
        Batch& batch = batches_[b];
        const size_t texts = in_.hyps_per_batch + (in_.symmetric ? 0 : in_.refs_per_batch);
        const int kinds = metric_.kinds();
        Interner words;
        words.reset(1024);
        NgramIds ids[2];
        TextScratch scratch;
        std::vector<uint32_t> seqs[2];
        std::vector<Count> counts;  // every text's, by text and order
        std::vector<size_t> starts{0};
        batch.length.resize(texts * kinds);
        for (size_t t = 0; t < texts; ++t) {
            metric_.symbols(text(b, t), words, scratch, seqs);
            for (int kind = 0; kind < kinds; ++kind) {
                const std::vector<uint32_t>& seq = seqs[kind];
                batch.length[t * kinds + kind] = seq.size();
                const int orders = metric_.orders(kind);
                for (int n = 1; n <= orders; ++n) {
                    // The ids of this order's n-grams, from those of the order below.
                    std::vector<uint32_t>& at = scratch.occurrences;
                    const size_t count = static_cast<size_t>(ngrams_in(seq.size(), n));
                    if (n == 1) at.assign(count, 0);
                    for (size_t i = 0; i < count; ++i)
                        at[i] = ids[kind].id(n == 1 ? 0 : at[i] + 1, seq[i + n - 1]);
                    at.resize(count);
                    scratch.ids.assign(at.begin(), at.end());
                    std::sort(scratch.ids.begin(), scratch.ids.end());
                    for (size_t i = 0; i < count;) {
                        size_t j = i + 1;
                        while (j < count && scratch.ids[j] == scratch.ids[i]) ++j;
                        counts.push_back({scratch.ids[i], static_cast<uint32_t>(j - i)});
                        i = j;
                    }
                    starts.push_back(counts.size());
                }
            }
        }
        // One id space for the batch: kind 1's ids after kind 0's.
        const uint32_t base[2] = {0, ids[0].size()};
        const size_t size = ids[0].size() + (kinds > 1 ? ids[1].size() : 0);
        auto global = [&](int order, uint32_t id) { return id + base[kind_of_order_[order]]; };
        // Which n-grams another text may match: held by two texts (symmetric), or by a
        // hypothesis and a reference.
        std::vector<uint8_t> holders(size, 0);
        for (size_t t = 0; t < texts; ++t) {
            const uint8_t mark = in_.symmetric ? 1 : (t < in_.hyps_per_batch ? 1 : 2);
            for (int g = 0; g < orders_; ++g)
                for (size_t e = starts[t * orders_ + g]; e < starts[t * orders_ + g + 1]; ++e) {
                    uint8_t& h = holders[global(g, counts[e].id)];
                    if (in_.symmetric) h = h < 2 ? h + 1 : 2;
                    else h |= mark;
                }
        }
        batch.starts.assign(1, 0);
        batch.counts.clear();
        for (size_t t = 0; t < texts; ++t) {
            for (int g = 0; g < orders_; ++g) {
                for (size_t e = starts[t * orders_ + g]; e < starts[t * orders_ + g + 1]; ++e) {
                    const uint32_t id = global(g, counts[e].id);
                    if (holders[id] == (in_.symmetric ? 2 : 3))
                        batch.counts.push_back({id, counts[e].count});
                }
                batch.starts.push_back(batch.counts.size());
            }
        }
        batch.ids = size;
    }

    void fill(size_t thread, size_t b, size_t h, double* out) override {
        const Batch& batch = batches_[b];
        const size_t H = in_.hyps_per_batch, R = in_.refs_per_batch;
        std::vector<uint32_t>& dense = dense_[thread];
        if (dense.size() < batch.ids) dense.resize(batch.ids, 0);
        std::vector<long long>& matches = matches_[thread];
        matches.assign(orders_, 0);
        const size_t* hyp_len = &batch.length[h * metric_.kinds()];
        const Count* begin = batch.counts.data() + batch.starts[h * orders_];
        const Count* end = batch.counts.data() + batch.starts[(h + 1) * orders_];
        for (const Count* c = begin; c != end; ++c) dense[c->id] = c->count;
        double* row = out + (b * H + h) * R;
        if (in_.symmetric) {
            // Against itself, every n-gram matches.
            for (int kind = 0, g = 0; kind < metric_.kinds(); ++kind)
                for (int n = 1; n <= metric_.orders(kind); ++n)
                    matches[g++] = ngrams_in(hyp_len[kind], n);
            row[h] = metric_.score(hyp_len, hyp_len, matches.data());
        }
        for (size_t r = in_.symmetric ? h + 1 : 0; r < R; ++r) {
            const size_t t = in_.symmetric ? r : H + r;
            for (int g = 0; g < orders_; ++g) {
                long long sum = 0;
                const Count* c = batch.counts.data() + batch.starts[t * orders_ + g];
                const Count* stop = batch.counts.data() + batch.starts[t * orders_ + g + 1];
                for (; c != stop; ++c) sum += std::min(dense[c->id], c->count);
                matches[g] = sum;
            }
            const size_t* ref_len = &batch.length[t * metric_.kinds()];
            row[r] = metric_.score(hyp_len, ref_len, matches.data());
            if (in_.symmetric) out[(b * H + r) * R + h] = metric_.score(ref_len, hyp_len, matches.data());
        }
        for (const Count* c = begin; c != end; ++c) dense[c->id] = 0;
    }

  private:
    struct Batch {
        std::vector<size_t> length;  // per text, per kind: its symbols
        std::vector<Count> counts;   // per text, per order: the n-grams that may match
        std::vector<size_t> starts;  // text t's order g: counts[starts[t * orders + g], ...)
        size_t ids = 0;
    };

    const TextRef& text(size_t b, size_t t) const {
        const size_t H = in_.hyps_per_batch;
        return t < H ? in_.hyps[b * H + t] : in_.refs[b * in_.refs_per_batch + (t - H)];
    }

    const PairwiseBatches& in_;
    Metric metric_;
    int orders_ = 0;  // of both kinds
    int kind_of_order_[128] = {0};
    std::vector<Batch> batches_;
    std::vector<std::vector<uint32_t>> dense_;
    std::vector<std::vector<long long>> matches_;
};

}  // namespace

double bleu_score(long long sys_len, long long ref_len, const long long* correct_counts,
                  const long long* total_counts, const BleuOptions& options) {
    // evaluators/bleu.py's BLEU._computed (sacrebleu's compute_bleu), operation by
    // operation; a precision of 0 contributes sacrebleu's log of -9999999999.
    const int order = options.max_order;
    double bp = 1.0;
    if (sys_len < ref_len)
        bp = sys_len > 0 ? std::exp(1.0 - static_cast<double>(ref_len) / static_cast<double>(sys_len))
                         : 0.0;
    bool any = false;
    for (int n = 0; n < order; ++n) any = any || correct_counts[n] != 0;
    if (!any) return 0.0;
    const double value = options.smooth_value;
    double precisions[64] = {0.0};
    double doubling = 1.0;
    int orders = order;
    for (int n = 0; n < order; ++n) {
        double correct = static_cast<double>(correct_counts[n]);
        double total = static_cast<double>(total_counts[n]);
        if (options.smooth == Smooth::AddK && n > 0) {
            correct += value;
            total += value;
        }
        if (total == 0) break;
        if (options.effective_order) orders = n + 1;
        if (correct != 0) {
            precisions[n] = 100. * correct / total;
        } else if (options.smooth == Smooth::Exp) {
            doubling *= 2;
            precisions[n] = 100. / (doubling * total);
        } else if (options.smooth == Smooth::Floor) {
            precisions[n] = 100. * value / total;
        }
    }
    // Python's sum() of the logs: -9999999999 is an int, added as a double; floats are
    // added in turn, or (Python 3.12 and later) with Neumaier's compensation, which
    // starts at the first float and leaves ints out.
    double sum = 0.0, compensation = 0.0;
    bool floats = false;
    for (int n = 0; n < orders; ++n) {
        const double p = precisions[n];
        if (p == 0.0) {
            sum += -9999999999.0;
            continue;
        }
        const double x = p > 0 ? std::log(p) : std::nan("");
        if (!options.compensated_sum || !floats) {
            sum += x;
            floats = true;
            continue;
        }
        const double t = sum + x;
        if (std::fabs(sum) >= std::fabs(x)) compensation += (sum - t) + x;
        else compensation += (x - t) + sum;
        sum = t;
    }
    if (compensation != 0.0 && std::isfinite(compensation)) sum += compensation;
    return bp * std::exp(sum / orders);
}

std::unique_ptr<Pairwise> chrf_pairwise(const PairwiseBatches& input, const ChrfOptions& options,
                                        size_t threads) {
    if (options.char_order + options.word_order > 64)
        throw KernelError("chrF's pairwise kernel takes at most 64 orders");
    return std::make_unique<NgramPairwise<ChrfMetric>>(input, ChrfMetric{options}, threads);
}

std::unique_ptr<Pairwise> bleu_pairwise(const PairwiseBatches& input, const BleuOptions& options,
                                        size_t threads) {
    if (options.max_order > 64) throw KernelError("BLEU's pairwise kernel takes at most order 64");
    return std::make_unique<NgramPairwise<BleuMetric>>(input, BleuMetric{options}, threads);
}

}  // namespace evalproto
