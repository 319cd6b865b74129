// The kernels, on plain C++ data: they run with the GIL released.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "text.hpp"

namespace evalproto {

// Segment i has hypothesis hyps[i] and references refs[ref_start[i], ref_start[i+1]).
template <class T>
struct Batch {
    std::vector<T> hyps;
    std::vector<T> refs;
    std::vector<size_t> ref_start{0};

    size_t segments() const { return hyps.size(); }
};

enum class Tokenizer { T13a, None, Char };

// The tokens BLEU counts: sacrebleu's tokenizer(text.rstrip()).split().
void bleu_tokens(const std::vector<cp_t>& text, Tokenizer tokenizer, Scratch13a& scratch,
                 Tokens& out);

// The n-grams of order `order` in a sequence of `length` symbols.
inline long long ngrams_in(size_t length, int order) {
    long long count = static_cast<long long>(length) - order + 1;
    return count > 0 ? count : 0;
}

// Each kernel fills the rows of segments [begin, end) of out, which holds a row for
// every segment of the batch; disjoint ranges can run on threads of their own.

// Rows [hyp_len, closest_ref_len, correct_1..N, total_1..N], N = max_order.
void bleu_rows(const Batch<TextRef>& batch, int max_order, Tokenizer tokenizer, double* out,
               size_t begin, size_t end);

struct ChrfOptions {
    int char_order = 6;
    int word_order = 0;
    long long beta = 2;
    bool whitespace = false;
    bool eps_smoothing = false;
};

// The characters chrF counts (all of them with `whitespace`, else those that
// ''.join(text.split()) keeps), and the words of chrF++ (sacrebleu's
// CHRF._remove_punctuation; `split` is scratch).
void characters_of(const std::vector<cp_t>& text, bool whitespace, std::vector<cp_t>& out);
void words_of(const std::vector<cp_t>& text, Tokens& split, Tokens& out);

// sacrebleu's CHRF._compute_f_score of [hyp, ref, match] per order, bit for bit.
double f_score(const double* stats, int orders, long long beta, bool eps_smoothing);

// Rows of [hyp, ref, match] per character order, then per word order, of the
// reference with the best segment F (the first of equals).
void chrf_rows(const Batch<TextRef>& batch, const ChrfOptions& options, double* out,
               size_t begin, size_t end);

// A tokenized segment: either one str whose words str.split() finds (split), or
// the words texts[begin, end) themselves.
struct WordSequence {
    bool split;
    size_t begin, end;
};

struct TerBatch {
    std::vector<TextRef> texts;
    Batch<WordSequence> segments;
};

// Rows [edits against the closest reference, average reference length].
void ter_rows(const TerBatch& batch, double* out, size_t begin, size_t end);

// The TER search's limits, sacrebleu lib_ter's (tests compare them).
constexpr int MAX_SHIFT_SIZE = 10;
constexpr int MAX_SHIFT_DIST = 50;
constexpr int BEAM_WIDTH = 25;
constexpr int MAX_SHIFT_CANDIDATES = 1000;

// All pairs (for minimum Bayes risk decoding): batch b's hypotheses are
// hyps[b * hyps_per_batch, (b + 1) * hyps_per_batch), its references likewise in refs, or
// its hypotheses themselves (`symmetric`, refs empty).
struct PairwiseBatches {
    std::vector<TextRef> hyps, refs;
    size_t batches = 0, hyps_per_batch = 0, refs_per_batch = 0;
    bool symmetric = false;
};

// BLEU's options as sacrebleu's BLEU.compute_bleu takes them.
enum class Smooth { None, Floor, AddK, Exp };
struct BleuOptions {
    int max_order = 4;
    Tokenizer tokenizer = Tokenizer::T13a;
    Smooth smooth = Smooth::Exp;
    double smooth_value = 0.0;
    bool effective_order = true;
    bool compensated_sum = false;  // Python's sum() of floats is Neumaier's (3.12 and later)
};

// The sentence scores of every hypothesis of a batch against every reference of it:
// out[(b * H + h) * R + r]. Each text's n-grams are counted once: `prepare` runs once per
// batch, then `fill` once per (batch, hypothesis); either on any of `threads` threads,
// which pass their number (each cell is written by one call).
class Pairwise {
  public:
    virtual ~Pairwise() = default;
    virtual void prepare(size_t thread, size_t batch) = 0;
    virtual void fill(size_t thread, size_t batch, size_t hyp, double* out) = 0;
};
std::unique_ptr<Pairwise> chrf_pairwise(const PairwiseBatches& input, const ChrfOptions& options,
                                        size_t threads);
std::unique_ptr<Pairwise> bleu_pairwise(const PairwiseBatches& input, const BleuOptions& options,
                                        size_t threads);

// sacrebleu's BLEU.compute_bleu score of one segment's statistics, bit for bit.
double bleu_score(long long sys_len, long long ref_len, const long long* correct,
                  const long long* total, const BleuOptions& options);

// An error in the kernel that Python should see as RuntimeError.
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace evalproto
