// The kernels, on plain C++ data: they run with the GIL released.
#pragma once

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

// An error in the kernel that Python should see as RuntimeError.
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace evalproto
