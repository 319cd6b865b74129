// TER's edit search, with the results of sacrebleu's lib_ter.translation_edit_rate.
//
// lib_ter (and evaluators/ter_search.py, the Python reference) is the specification:
// greedy shifts, each round trying the candidate shifts of spans that the current
// hypothesis shares with the reference and keeping the one that lowers a beam edit
// distance most, ranked (gain, span length, -hyp start, -target); at most 1000
// candidates in all; a trace whose operations prefer match/substitution, then
// deletion, then insertion. What differs is only how distances are found:
//
// - A candidate needs only its distance, not a trace, so it is computed row by row
//   from the first row where it differs from the current hypothesis (rows depend on
//   the hypothesis prefix only), keeping two rows. lib_ter's cache of rows keyed by
//   hypothesis prefix serves the same purpose; within one (hyp, ref) pair every
//   hypothesis it sees is a shift of the first and so has the same length, hence the
//   same beam, so a cached row is the row the prefix would get anyway and the cache
//   (with its size cap) cannot change a result.
// - Only a candidate that could become the best needs its exact distance: with the
//   best so far, the rank keys decide the largest distance at which it still wins.
//   Candidates above it are dismissed by lower bounds: the unbanded edit distance
//   (bit-parallel, for references up to 64 words), which a beam can only raise, and
//   while filling banded rows, the cheapest way to finish from any cell of a row.
//   A round whose best gain is not positive ends the search whatever its best was,
//   so a candidate must gain at least 1 to matter.
// - When the beam covers the whole matrix, the banded distance is the unbanded one.
#include <algorithm>
#include <cmath>

#include "kernels.hpp"

namespace evalproto {

namespace {

constexpr int32_t INF = 1 << 30;  // lib_ter's 10**16: a cell outside the beam
constexpr uint8_t OP_MATCH = ' ', OP_SUB = 's', OP_INS = 'i', OP_DEL = 'd', OP_UNDEF = 'x';

class TerSearch {
  public:
    long long edits(const std::vector<uint32_t>& hyp, const std::vector<uint32_t>& ref,
                    uint32_t vocabulary);

  private:
    void prepare(const std::vector<uint32_t>& ref, size_t n, uint32_t vocabulary);
    void release_ref();
    int32_t fill_current();
    void align_current();
    void myers_states();
    void shift_into(int start, int length, int target, std::vector<uint32_t>& out) const;
    int32_t distance_at_most(int start, int length, int target, int32_t limit);
    int32_t banded_from(int first_row, int32_t limit);

    // The pair.
    int n_ = 0, m_ = 0;
    const uint32_t* ref_ = nullptr;
    std::vector<int> lo_, hi_;  // the beam: row i computes columns [lo_[i], hi_[i])
    bool band_full_ = false;    // the beam covers every cell
    bool bit_parallel_ = false; // the reference fits one 64-bit word
    std::vector<int> ref_head_, ref_next_;  // positions of each word in the reference
    std::vector<uint64_t> peq_;             // bit j: reference word j is the word

    // The current hypothesis: its matrix (rows of m + 2 cells, column j at j + 1,
    // column -1 always INF), its operations, alignment and bit-parallel states.
    std::vector<uint32_t> h_, shifted_;
    std::vector<int32_t> cost_;
    std::vector<uint8_t> ops_;
    std::vector<uint8_t> trace_;
    std::vector<int> align_, ref_errors_, hyp_errors_;  // error counts as prefix sums
    std::vector<uint64_t> vp_, vn_;
    std::vector<int32_t> unbanded_;

    std::vector<int32_t> row_a_, row_b_;
};

void TerSearch::prepare(const std::vector<uint32_t>& ref, size_t n, uint32_t vocabulary) {
    n_ = static_cast<int>(n);
    m_ = static_cast<int>(ref.size());
    ref_ = ref.data();
    // lib_ter's beam: a band around the length-scaled diagonal, widened for very
    // unequal lengths, the last row whole. The same double operations as Python's.
    const double ratio = n_ ? static_cast<double>(m_) / static_cast<double>(n_) : 1.0;
    const int beam = BEAM_WIDTH < ratio / 2
                         ? static_cast<int>(std::ceil(ratio / 2 + BEAM_WIDTH))
                         : BEAM_WIDTH;
    lo_.assign(n_ + 1, 0);
    hi_.assign(n_ + 1, m_ + 1);
    band_full_ = true;
    for (int i = 1; i <= n_; ++i) {
        const long long diagonal = static_cast<long long>(std::floor(i * ratio));
        lo_[i] = static_cast<int>(std::max<long long>(0, diagonal - beam));
        hi_[i] = i == n_ ? m_ + 1 : static_cast<int>(std::min<long long>(m_ + 1, diagonal + beam));
        if (lo_[i] != 0 || hi_[i] != m_ + 1) band_full_ = false;
    }
    if (ref_head_.size() < vocabulary) {
        ref_head_.resize(vocabulary, -1);
        peq_.resize(vocabulary, 0);
    }
    ref_next_.assign(m_, -1);
    for (int j = m_ - 1; j >= 0; --j) {
        ref_next_[j] = ref_head_[ref_[j]];
        ref_head_[ref_[j]] = j;
    }
    bit_parallel_ = m_ <= 64;
    if (bit_parallel_)
        for (int j = 0; j < m_; ++j) peq_[ref_[j]] |= uint64_t{1} << j;
}

void TerSearch::release_ref() {
    for (int j = 0; j < m_; ++j) {
        ref_head_[ref_[j]] = -1;
        peq_[ref_[j]] = 0;
    }
}

// The current hypothesis' banded matrix with operations, as lib_ter fills it; returns
// its distance.
int32_t TerSearch::fill_current() {
    const size_t width = m_ + 2;
    cost_.assign((n_ + 1) * width, INF);
    ops_.assign((n_ + 1) * width, OP_UNDEF);
    for (int j = 0; j <= m_; ++j) {
        cost_[j + 1] = j;
        ops_[j + 1] = OP_INS;
    }
    for (int i = 1; i <= n_; ++i) {
        const int32_t* prev = &cost_[(i - 1) * width + 1];
        int32_t* cur = &cost_[i * width + 1];
        uint8_t* op = &ops_[i * width + 1];
        const uint32_t word = h_[i - 1];
        int j = lo_[i];
        if (j == 0) {
            cur[0] = prev[0] + 1;
            op[0] = OP_DEL;
            j = 1;
        }
        for (; j < hi_[i]; ++j) {
            // lib_ter takes an operation only when strictly cheaper than the one
            // before, in the order match/substitution, deletion, insertion.
            int32_t c = prev[j - 1];
            uint8_t o = OP_MATCH;
            if (word != ref_[j - 1]) {
                ++c;
                o = OP_SUB;
            }
            if (prev[j] + 1 < c) {
                c = prev[j] + 1;
                o = OP_DEL;
            }
            if (cur[j - 1] + 1 < c) {
                c = cur[j - 1] + 1;
                o = OP_INS;
            }
            if (c >= INF) {  // nothing beat the cell's initial infinity
                c = INF;
                o = OP_UNDEF;
            }
            cur[j] = c;
            op[j] = o;
        }
    }
    return cost_[n_ * width + m_ + 1];
}

// lib_ter's trace from the last cell back, flipped (it rewrites the reference into the
// hypothesis), turned into each reference word's hypothesis position and the error
// positions on both sides.
void TerSearch::align_current() {
    const size_t width = m_ + 2;
    trace_.clear();
    int i = n_, j = m_;
    while (i > 0 || j > 0) {
        const uint8_t o = ops_[i * width + j + 1];
        trace_.push_back(o);
        if (o == OP_MATCH || o == OP_SUB) {
            --i;
            --j;
        } else if (o == OP_INS) {
            --j;
        } else if (o == OP_DEL) {
            --i;
        } else {
            throw KernelError("TER trace reached an undefined cell");
        }
    }
    align_.assign(m_, 0);
    ref_errors_.assign(m_ + 1, 0);
    hyp_errors_.assign(n_ + 1, 0);
    int hyp_pos = -1, ref_pos = -1;
    for (auto it = trace_.rbegin(); it != trace_.rend(); ++it) {
        const uint8_t o = *it;
        if (o == OP_MATCH || o == OP_SUB) {
            ++hyp_pos;
            ++ref_pos;
            align_[ref_pos] = hyp_pos;
            hyp_errors_[hyp_pos + 1] = ref_errors_[ref_pos + 1] = o == OP_SUB;
        } else if (o == OP_DEL) {  // flipped: an insertion into the hypothesis
            ++hyp_pos;
            hyp_errors_[hyp_pos + 1] = 1;
        } else {  // OP_INS, flipped: a deletion of a reference word
            ++ref_pos;
            align_[ref_pos] = hyp_pos;
            ref_errors_[ref_pos + 1] = 1;
        }
    }
    for (int k = 0; k < n_; ++k) hyp_errors_[k + 1] += hyp_errors_[k];
    for (int k = 0; k < m_; ++k) ref_errors_[k + 1] += ref_errors_[k];
}

// Hyyrö's bit-parallel edit distance, one state per row of the current hypothesis:
// bit j of vp/vn says that D[i][j+1] - D[i][j] is +1/-1; unbanded_[i] = D[i][m].
inline void myers_step(uint64_t eq, uint64_t& vp, uint64_t& vn, int32_t& distance, uint64_t last) {
    const uint64_t d0 = (((eq & vp) + vp) ^ vp) | eq | vn;
    uint64_t hp = vn | ~(d0 | vp);
    uint64_t hn = d0 & vp;
    distance += (hp & last) != 0;
    distance -= (hn & last) != 0;
    hp = (hp << 1) | 1;  // column 0 grows by one per row: D[i][0] = i
    hn <<= 1;
    vp = hn | ~(d0 | hp);
    vn = hp & d0;
}

void TerSearch::myers_states() {
    vp_.resize(n_ + 1);
    vn_.resize(n_ + 1);
    unbanded_.resize(n_ + 1);
    uint64_t vp = ~uint64_t{0}, vn = 0;
    int32_t distance = m_;
    const uint64_t last = uint64_t{1} << (m_ - 1);
    vp_[0] = vp;
    vn_[0] = vn;
    unbanded_[0] = distance;
    for (int i = 1; i <= n_; ++i) {
        myers_step(peq_[h_[i - 1]], vp, vn, distance, last);
        vp_[i] = vp;
        vn_[i] = vn;
        unbanded_[i] = distance;
    }
}

// lib_ter's _perform_shift(h, start, length, target), with Python's slice clamping.
void TerSearch::shift_into(int start, int length, int target, std::vector<uint32_t>& out) const {
    const uint32_t* h = h_.data();
    out.clear();
    auto take = [&](int from, int to) {
        from = std::min(from, n_);
        to = std::min(to, n_);
        if (from < to) out.insert(out.end(), h + from, h + to);
    };
    if (target < start) {
        take(0, target);
        take(start, start + length);
        take(target, start);
        take(start + length, n_);
    } else if (target > start + length) {
        take(0, start);
        take(start + length, target);
        take(start, start + length);
        take(target, n_);
    } else {
        take(0, start);
        take(start + length, length + target);
        take(start, start + length);
        take(length + target, n_);
    }
}

// The banded distance of shifted_, from row first_row on (rows up to it are the
// current hypothesis'), or some value above `limit` once it cannot be <= limit.
int32_t TerSearch::banded_from(int first_row, int32_t limit) {
    const size_t width = m_ + 2;
    row_a_.resize(width);
    row_b_.resize(width);
    row_a_[0] = row_b_[0] = INF;  // column -1
    const int32_t* prev = &cost_[first_row * width + 1];
    int32_t* rows[2] = {row_a_.data() + 1, row_b_.data() + 1};
    for (int i = first_row + 1; i <= n_; ++i) {
        int32_t* cur = rows[i & 1];
        const uint32_t word = shifted_[i - 1];
        const int lo = lo_[i], hi = hi_[i];
        int j = lo;
        int32_t left = INF;
        if (lo > 0) cur[lo - 1] = INF;  // read as the diagonal by the next row
        if (j == 0) {
            left = cur[0] = prev[0] + 1;
            j = 1;
        }
        for (; j < hi; ++j) {
            int32_t c = prev[j - 1] + (word != ref_[j - 1]);
            c = std::min(c, prev[j] + 1);
            c = std::min(c, left + 1);
            c = std::min(c, INF);
            cur[j] = left = c;
        }
        if (i == n_) return cur[m_];
        for (j = hi; j < hi_[i + 1]; ++j) cur[j] = INF;  // read by the next row
        // From cell (i, j) the rest of any path costs at least the difference of
        // the remaining lengths.
        int32_t bound = INF;
        const int remaining = n_ - i - m_;
        for (j = lo; j < hi; ++j) bound = std::min(bound, cur[j] + std::abs(remaining + j));
        if (bound > limit) return bound;
        prev = cur;
    }
    return INF;  // not reached: rows go up to n_ >= 1
}

int32_t TerSearch::distance_at_most(int start, int length, int target, int32_t limit) {
    shift_into(start, length, target, shifted_);
    int p = std::min(start, target);
    while (p < n_ && shifted_[p] == h_[p]) ++p;
    if (p == n_) return cost_[n_ * (m_ + 2) + m_ + 1];
    if (bit_parallel_) {
        uint64_t vp = vp_[p], vn = vn_[p];
        int32_t distance = unbanded_[p];
        const uint64_t last = uint64_t{1} << (m_ - 1);
        for (int i = p; i < n_; ++i) myers_step(peq_[shifted_[i]], vp, vn, distance, last);
        if (band_full_ || distance > limit) return distance;
    }
    return banded_from(p, limit);
}

long long TerSearch::edits(const std::vector<uint32_t>& hyp, const std::vector<uint32_t>& ref,
                           uint32_t vocabulary) {
    if (ref.empty()) return static_cast<long long>(hyp.size());
    prepare(ref, hyp.size(), vocabulary);
    h_ = hyp;
    long long shifts = 0;
    int checked = 0;
    int32_t before;
    try {
        while (true) {
            before = fill_current();
            align_current();
            if (bit_parallel_) myers_states();
            bool found = false;
            int32_t best_gain = 0;
            int best_length = 0, best_start = 0, best_target = 0;
            bool stop = false;
            for (int start_h = 0; start_h < n_ && !stop; ++start_h) {
                for (int start_r = ref_head_[h_[start_h]]; start_r >= 0 && !stop;
                     start_r = ref_next_[start_r]) {
                    if (std::abs(start_r - start_h) > MAX_SHIFT_DIST) continue;
                    // lib_ter's _find_shifted_pairs: every length of the shared span,
                    // up to MAX_SHIFT_SIZE and the end of either sequence.
                    for (int length = 1;; ++length) {
                        const int a = align_[start_r];
                        if (hyp_errors_[start_h + length] != hyp_errors_[start_h] &&
                            ref_errors_[start_r + length] != ref_errors_[start_r] &&
                            !(start_h <= a && a < start_h + length)) {
                            int previous = -1;
                            for (int offset = -1; offset < length; ++offset) {
                                int target;
                                if (start_r + offset == -1) {
                                    target = 0;
                                } else if (start_r + offset < m_) {
                                    target = align_[start_r + offset] + 1;
                                } else {
                                    break;
                                }
                                if (target == previous) continue;
                                previous = target;
                                ++checked;
                                // The largest distance at which this candidate beats
                                // the best so far: on equal gains the rank keys
                                // (length, -start, -target) decide.
                                bool wins_ties = false;
                                if (found) {
                                    wins_ties = length != best_length ? length > best_length
                                              : start_h != best_start ? start_h < best_start
                                                                      : target < best_target;
                                }
                                const int32_t limit = before - best_gain - (wins_ties ? 0 : 1);
                                const int32_t distance = distance_at_most(start_h, length, target, limit);
                                if (distance <= limit) {
                                    found = true;
                                    best_gain = before - distance;
                                    best_length = length;
                                    best_start = start_h;
                                    best_target = target;
                                }
                            }
                            if (checked >= MAX_SHIFT_CANDIDATES) stop = true;
                        }
                        if (stop || start_h + length == n_ || start_r + length == m_ ||
                            length == MAX_SHIFT_SIZE || h_[start_h + length] != ref_[start_r + length])
                            break;
                    }
                }
            }
            if (checked >= MAX_SHIFT_CANDIDATES || !found) break;
            ++shifts;
            shift_into(best_start, best_length, best_target, shifted_);
            h_.swap(shifted_);
        }
    } catch (...) {
        release_ref();
        throw;
    }
    release_ref();
    return shifts + before;
}

}  // namespace

void ter_rows(const TerBatch& batch, double* out, size_t begin, size_t end) {
    TerSearch search;
    Interner interner;
    std::vector<cp_t> text;
    Tokens tokens;
    std::vector<uint32_t> hyp;
    std::vector<std::vector<uint32_t>> refs;
    // The words of one sequence as ids; all words of a segment share one numbering.
    auto read = [&](const WordSequence& sequence, std::vector<uint32_t>& ids) {
        ids.clear();
        if (sequence.split) {
            text.clear();
            append_code_points(batch.texts[sequence.begin], text);
            tokens.clear();
            split_whitespace(text.data(), text.size(), tokens);
            for (size_t t = 0; t < tokens.size(); ++t)
                ids.push_back(interner.add(tokens.begin_of(t), tokens.length_of(t)));
        } else {
            for (size_t w = sequence.begin; w < sequence.end; ++w) {
                text.clear();
                append_code_points(batch.texts[w], text);
                ids.push_back(interner.add(text.data(), text.size()));
            }
        }
    };
    const Batch<WordSequence>& segments = batch.segments;
    for (size_t s = begin; s < end; ++s) {
        const size_t first = segments.ref_start[s], count = segments.ref_start[s + 1] - first;
        size_t expected = 0;
        for (size_t r = first; r < first + count; ++r)
            expected += segments.refs[r].end - segments.refs[r].begin;
        const WordSequence& h = segments.hyps[s];
        interner.reset(64 + expected + (h.end - h.begin));
        read(h, hyp);
        if (refs.size() < count) refs.resize(count);
        for (size_t r = 0; r < count; ++r) read(segments.refs[first + r], refs[r]);
        // sacrebleu: the fewest edits over the references (the first of equals) and
        // the mean reference length, as Python divides.
        long long best = 0, total_length = 0;
        for (size_t r = 0; r < count; ++r) {
            const long long edits = search.edits(hyp, refs[r], interner.size());
            total_length += static_cast<long long>(refs[r].size());
            if (r == 0 || edits < best) best = edits;
        }
        out[2 * s] = static_cast<double>(best);
        out[2 * s + 1] = static_cast<double>(total_length) / static_cast<double>(count);
    }
}

}  // namespace evalproto
