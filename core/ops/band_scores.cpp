// BandScores (score_geometry.h): the band |i − j| ≤ W of X, its log-sum-exp passes by diagonals, and its plan.
#include "ops/score_geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/large_buffers.h"
#include "common/parallel.h"
#include "common/streaming_store.h"
#include "ops/log_domain.h"

namespace tl {
namespace {

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// Row i of a band plan on its support, scale·exp(X_ij + ut_i + vt_j) for its columns [j0, j0 + width), written
// into the first `width` entries of `a` as packets. Returns j0 and width; width 0 for an inactive row.
template <class T>
std::pair<Eigen::Index, Eigen::Index> bandPlanRow(const BandScores<T>& X, Eigen::Index i, const Vec<T>& ut,
                                                  const Vec<T>& vt, T scale, Eigen::Matrix<T, 1, Eigen::Dynamic>& a) {
  const Eigen::Index b0 = X.firstSlot(i), width = X.lastSlot(i) - b0 + 1, j0 = i - X.halfWidth() + b0;
  if (width <= 0 || ut(i) == kNegInf<T>) return {j0, 0};
  a.head(width) = (scale * exactExp(X.band().row(i).segment(b0, width).array() + ut(i) +
                                    vt.segment(j0, width).transpose().array())).matrix();
  return {j0, width};
}

// Slots [first, last] of row r of a band |r − c| ≤ W with `others` tokens on the other side: its support.
std::pair<Eigen::Index, Eigen::Index> bandSlots(Eigen::Index r, Eigen::Index others, Eigen::Index halfWidth) {
  return {std::max<Eigen::Index>(0, halfWidth - r), std::min<Eigen::Index>(2 * halfWidth, others - 1 - r + halfWidth)};
}

constexpr Eigen::Index kChunk = 256;  // tokens per chunk of a pass by diagonals

// The log-sum-exp of one chunk's tokens [first, first + n): log Σ_c exp(x_c(t)), where runs(c, first, n, add)
// calls add(at, x) with the run x of slot c's terms for tokens first + at … first + at + x.size() − 1 (none if the
// slot has no support there). A first sweep over the slots takes each token's maximum and a second sums the
// exponentials, both as packets across tokens, with no per-token reductions: a band row holds at most 2W + 1
// entries, too few to fill packets well. Each token's terms are added in slot order. A token with no term (no
// support) or no finite one (inactive) gets −inf: shift 0 (logSumExpShift) and log 0. Leaves the shifts in
// `shift` and the sums of exp(x − shift) in `sum` (n entries each); with `kept`, each slot's run of exponentials
// is also stored there, slot c's term for token first + a at kept[c·kChunk + a].
template <class T, class Runs>
void chunkLogSumExp(Eigen::Index first, Eigen::Index n, Eigen::Index slots, const Runs& runs,
                    Eigen::Array<T, Eigen::Dynamic, 1>& shift, Eigen::Array<T, Eigen::Dynamic, 1>& sum, T* kept) {
  auto m = shift.head(n);
  auto total = sum.head(n);
  m.setConstant(kNegInf<T>);
  for (Eigen::Index c = 0; c < slots; ++c)
    runs(c, first, n, [&](Eigen::Index at, const auto& x) {
      auto slotMax = m.segment(at, x.size());
      slotMax = slotMax.max(x);
    });
  m = (m == kNegInf<T>).select(T(0), m);
  total.setZero();
  for (Eigen::Index c = 0; c < slots; ++c)
    runs(c, first, n, [&](Eigen::Index at, const auto& x) {
      const Eigen::Index len = x.size();
      if (!kept) {
        total.segment(at, len) += exactExp(x - m.segment(at, len));
        return;
      }
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> terms(kept + c * kChunk + at, len);
      terms = exactExp(x - m.segment(at, len));
      total.segment(at, len) += terms;
    });
}

// The log-sum-exp of tokens [0, count) by chunks (chunkLogSumExp), the chunks split across threads; each token's
// terms are added in slot order, so the result does not depend on the thread count.
template <class T, class Runs>
Vec<T> diagonalLogSumExp(Eigen::Index count, Eigen::Index slots, const Runs& runs) {
  Vec<T> out(count);
  const Eigen::Index chunks = (count + kChunk - 1) / kChunk;
  parallelFor(chunks, double(count) * double(slots), [&](Eigen::Index firstChunk, Eigen::Index endChunk) {
    Eigen::Array<T, Eigen::Dynamic, 1> shifts(kChunk), sums(kChunk);
    for (Eigen::Index chunk = firstChunk; chunk < endChunk; ++chunk) {
      const Eigen::Index first = chunk * kChunk, n = std::min(kChunk, count - first);
      chunkLogSumExp<T>(first, n, slots, runs, shifts, sums, nullptr);
      out.segment(first, n) = (shifts.head(n) + sums.head(n).log()).matrix();
    }
  });
  return out;
}
}  // namespace

Mask bandActiveRows(Eigen::Index nq, Eigen::Index nk, Eigen::Index halfWidth) {
  Mask m(nq);
  for (Eigen::Index i = 0; i < nq; ++i) m(i) = i - halfWidth < nk;  // some column j with |i − j| ≤ W exists
  return m;
}

Mask bandActiveCols(Eigen::Index nq, Eigen::Index nk, Eigen::Index halfWidth) {
  Mask m(nk);
  for (Eigen::Index j = 0; j < nk; ++j) m(j) = j - halfWidth < nq;  // some row i with |i − j| ≤ W exists
  return m;
}

template <class T>
BandScores<T>::BandScores(const Mat<T>& Q, const Mat<T>& K, T eps, Eigen::Index halfWidth)
    : nq_(Q.rows()), nk_(K.rows()), W_(halfWidth), band_(Q.rows(), 2 * halfWidth + 1) {
  const T root = std::sqrt(T(Q.cols()));
  // Row i's scores are one matrix-vector product with the keys it reaches; rows split across threads. Each row is
  // written whole (its off-support slots −inf), scaled by 1/√d then by 1/eps, and records its largest |S_ij| (NaN
  // if one is NaN) for the overflow check. (Register tiles of 6 queries × a run of keys, as for the dense scores,
  // took less time for the scores themselves, but whole banded runs with a dense plan at n = 4096 were 15–30 %
  // slower with them, measured side by side, and no faster at 1024.)
  Vec<T> rowMaxAbs = Vec<T>::Zero(nq_);
  parallelFor(nq_, double(band_.size()) * double(Q.cols()), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index i = first; i < end; ++i) {
      band_.row(i).setConstant(kNegInf<T>);
      const Eigen::Index b0 = firstSlot(i), width = lastSlot(i) - b0 + 1;
      if (width <= 0) continue;
      auto scores = band_.row(i).segment(b0, width);
      scores.noalias() = Q.row(i) * K.middleRows(i - W_ + b0, width).transpose();
      scores /= root;
      rowMaxAbs(i) = scores.array().abs().template maxCoeff<Eigen::PropagateNaN>();  // as packets
      scores /= eps;
    }
  });
  checkScaledScores(rowMaxAbs.template maxCoeff<Eigen::PropagateNaN>(), double(eps));
  formDiagonals();
}

template <class T>
BandScores<T>::BandScores(Mat<T> band, Eigen::Index nk, Eigen::Index halfWidth)
    : nq_(band.rows()), nk_(nk), W_(halfWidth), band_(std::move(band)) {
  if (band_.cols() != 2 * W_ + 1) throw std::logic_error("BandScores: a band needs 2W + 1 slots per row");
  formDiagonals();
}

template <class T>
Eigen::Index BandScores<T>::firstSlot(Eigen::Index i) const {
  return bandSlots(i, nk_, W_).first;
}

template <class T>
Eigen::Index BandScores<T>::lastSlot(Eigen::Index i) const {
  return bandSlots(i, nk_, W_).second;
}

template <class T>
std::pair<Eigen::Index, Eigen::Index> BandScores<T>::slotRows(Eigen::Index c) const {
  const Eigen::Index first = std::max<Eigen::Index>(0, W_ - c), end = std::min(nq_, nk_ + W_ - c);
  return {first, std::max(first, end)};
}

template <class T>
void BandScores<T>::formDiagonals() {
  diagonalStart_.assign(size_t(band_.cols()) + 1, 0);
  for (Eigen::Index c = 0; c < band_.cols(); ++c) {
    const auto [first, end] = slotRows(c);
    diagonalStart_[size_t(c) + 1] = diagonalStart_[size_t(c)] + (end - first);
  }
  diagonals_.resize(diagonalStart_.back());
  parallelFor(band_.cols(), double(band_.size()), [&](Eigen::Index firstSlot, Eigen::Index endSlot) {
    for (Eigen::Index c = firstSlot; c < endSlot; ++c) {
      const auto [first, end] = slotRows(c);
      diagonal(c) = band_.col(c).segment(first, end - first);
    }
  });
}

template <class T>
Mask BandScores<T>::activeRows() const {
  return bandActiveRows(nq_, nk_, W_);
}

template <class T>
Mask BandScores<T>::activeCols() const {
  return bandActiveCols(nq_, nk_, W_);
}

// Row i: Σ over slots c of exp(X(i, i − W + c) + colShift(i − W + c)); for the chunk's rows in slot c's range, both
// runs are contiguous in i.
template <class T>
auto BandScores<T>::rowRuns(const Vec<T>& colShift) const {
  return [this, &colShift](Eigen::Index c, Eigen::Index first, Eigen::Index n, auto&& add) {
    const auto [slotFirst, slotEnd] = slotRows(c);
    const Eigen::Index from = std::max(first, slotFirst), to = std::min(first + n, slotEnd);
    if (from < to)
      add(from - first, diagonal(c).segment(from - slotFirst, to - from).array() +
                            colShift.segment(from - W_ + c, to - from).array());
  };
}

template <class T>
Vec<T> BandScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  return diagonalLogSumExp<T>(nq_, band_.cols(), rowRuns(colShift));
}

// DenseScores' one pass for both half-steps (log_domain.h, rowClosurePass), by diagonals: a chunk's row
// exponentials exp(X_ij + colShift_j − m_i), kept from its row sums, times exp(u_i + m_i) are the new plan's
// entries exp(X_ij + u_i + colShift_j); summed down the columns they give colLse_j = log(sum) − colShift_j, so the
// column half-step takes no exponential per entry. Each chunk sums into its own columns [first − W, first + n + W)
// slot by slot, and the chunks' sums are added in chunk order: the result does not depend on the thread count.
// The exact column pass stands in where the dense pass takes it (a factor not finite, a column sum that may have
// underflowed) and where a chunk's kept exponentials would not fit in a core's L2 cache (W in the hundreds).
template <class T>
RowClosurePass<T> BandScores<T>::rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const {
  constexpr std::size_t kKeptBytes = std::size_t(1) << 20;
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  const Eigen::Index slots = band_.cols();
  RowClosurePass<T> r;
  if (std::size_t(slots * kChunk) * sizeof(T) > kKeptBytes) {
    r.rowLse = rowLogSumExp(colShift);
    r.colLse = withMaskedColumns(colLogSumExp(closure(logRowMarginal, r.rowLse)), colShift);
    return r;
  }
  const Eigen::Index chunks = (nq_ + kChunk - 1) / kChunk, reach = kChunk + slots - 1;
  const auto runs = rowRuns(colShift);
  r.rowLse.resize(nq_);
  Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic> chunkColSums(reach, chunks);  // column k: chunk k's sums
  std::vector<char> chunkExact(std::size_t(chunks), 1);
  parallelFor(chunks, 2 * double(nq_) * double(slots), [&](Eigen::Index firstChunk, Eigen::Index endChunk) {
    Array shifts(kChunk), sums(kChunk), factors(kChunk), kept(slots * kChunk);
    for (Eigen::Index chunk = firstChunk; chunk < endChunk; ++chunk) {
      const Eigen::Index first = chunk * kChunk, n = std::min(kChunk, nq_ - first);
      chunkLogSumExp<T>(first, n, slots, runs, shifts, sums, kept.data());
      auto lse = r.rowLse.segment(first, n);
      lse = (shifts.head(n) + sums.head(n).log()).matrix();
      // The closure first (no packet access), then the exponentials as packets; 0 on inactive rows (no mass).
      factors.head(n) = logRowMarginal.segment(first, n).binaryExpr(lse, [](T m, T l) { return closedPotential(m, l); });
      factors.head(n) = exactExp(factors.head(n) + shifts.head(n));
      if (!factors.head(n).allFinite()) {
        chunkExact[std::size_t(chunk)] = 0;
        continue;
      }
      // Slot c's entry for row first + a lies in column first − W + a + c: entry a + c of the chunk's sums.
      auto colSums = chunkColSums.col(chunk);
      colSums.setZero();
      for (Eigen::Index c = 0; c < slots; ++c)
        runs(c, first, n, [&](Eigen::Index at, const auto& x) {
          const Eigen::Index len = x.size();
          colSums.segment(at + c, len) += kept.segment(c * kChunk + at, len) * factors.segment(at, len);
        });
    }
  });
  const bool exact = std::all_of(chunkExact.begin(), chunkExact.end(), [](char e) { return e != 0; });
  Array total = Array::Zero(nk_);
  for (Eigen::Index chunk = 0; chunk < chunks && exact; ++chunk) {
    const Eigen::Index lowest = chunk * kChunk - W_;  // the column of the chunk's entry 0
    const Eigen::Index from = std::max<Eigen::Index>(0, -lowest), to = std::min(reach, nk_ - lowest);
    if (from < to) total.segment(lowest + from, to - from) += chunkColSums.col(chunk).segment(from, to - from);
  }
  if (!exact || !columnLseFromSums(total, colShift, r.colLse))
    r.colLse = withMaskedColumns(colLogSumExp(closure(logRowMarginal, r.rowLse)), colShift);
  return r;
}

// Column j: Σ over c of exp(X(i, j) + rowShift(i)) with i = j − W + c, which is slot 2W − c of row i: for the
// chunk's columns, the rows of slot 2W − c's range they reach form one contiguous run, so the column pass is the
// row pass with the slots reversed and offset.
template <class T>
Vec<T> BandScores<T>::colLogSumExp(const Vec<T>& rowShift) const {
  const Eigen::Index last = band_.cols() - 1;
  return diagonalLogSumExp<T>(nk_, band_.cols(), [&](Eigen::Index c, Eigen::Index first, Eigen::Index n, auto&& add) {
    const Eigen::Index slot = last - c;
    const auto [slotFirst, slotEnd] = slotRows(slot);
    const Eigen::Index from = std::max(first - W_ + c, slotFirst), to = std::min(first + n - W_ + c, slotEnd);
    if (from < to)
      add(from + W_ - c - first, diagonal(slot).segment(from - slotFirst, to - from).array() +
                                     rowShift.segment(from, to - from).array());
  });
}

template <class T>
template <class Visit>
void BandScores<T>::forEachEntry(const Vec<T>& ut, const Vec<T>& vt, T scale, Visit&& visit) const {
  // Each row's entries as the dense rows have them (bandPlanRow's packets: a scalar exp per entry was most of
  // the display tiles' time at n = 65536), skipping inactive columns.
  Eigen::Matrix<T, 1, Eigen::Dynamic> a(band_.cols());
  for (Eigen::Index i = 0; i < nq_; ++i) {
    const auto [j0, width] = bandPlanRow(*this, i, ut, vt, scale, a);
    for (Eigen::Index k = 0; k < width; ++k)
      if (vt(j0 + k) != kNegInf<T>) visit(i, j0 + k, a(k));
  }
}

template <class T>
Mat<T> BandScores<T>::planRows(const Vec<T>& ut, const Vec<T>& vt, T scale, Eigen::Index first,
                               Eigen::Index count) const {
  Mat<T> P = largeMatrix<T>(count, nk_);
  // Each row written once, its zeros with its band, by the thread that owns it: no separate pass to clear P.
  parallelFor(count, double(count) * double(nk_), [&](Eigen::Index begin, Eigen::Index end) {
    Eigen::Matrix<T, 1, Eigen::Dynamic> a(band_.cols());
    writeDenseRows(P, begin, end, [&](Eigen::Index r, T* row) {
      const auto [j0, width] = bandPlanRow(*this, first + r, ut, vt, scale, a);
      const Eigen::Index bandStart = width > 0 ? j0 : nk_;
      std::fill(row, row + bandStart, T(0));
      std::copy(a.data(), a.data() + width, row + bandStart);
      std::fill(row + std::min(nk_, bandStart + width), row + nk_, T(0));
    });
  });
  return P;
}

template <class T>
void BandScores<T>::visitEntries(const Vec<T>& ut, const Vec<T>& vt, T scale, const EntryVisitor<T>& visit) const {
  forEachEntry(ut, vt, scale, [&](Eigen::Index i, Eigen::Index j, T a) { visit({i, j, a}); });
}

// Each row of O is its plan row (at most 2W + 1 weights) times the matching rows of V; rows split across threads.
template <class T>
Mat<T> BandScores<T>::apply(const Vec<T>& ut, const Vec<T>& vt, T scale, const Mat<T>& V) const {
  Mat<T> O = Mat<T>::Zero(nq_, V.cols());
  parallelFor(nq_, double(band_.size()) * double(V.cols()), [&](Eigen::Index first, Eigen::Index end) {
    Eigen::Matrix<T, 1, Eigen::Dynamic> a(band_.cols());
    for (Eigen::Index i = first; i < end; ++i) {
      const auto [j0, width] = bandPlanRow(*this, i, ut, vt, scale, a);
      if (width > 0) O.row(i).noalias() = a.head(width) * V.middleRows(j0, width);
    }
  });
  return O;
}

template <class T>
Mat<T> BandScores<T>::applyTransposed(const Vec<T>& ut, const Vec<T>& vt, T scale, const Mat<T>& W) const {
  Mat<T> O = Mat<T>::Zero(nk_, W.cols());
  forEachEntry(ut, vt, scale, [&](Eigen::Index i, Eigen::Index j, T a) { O.row(j) += a * W.row(i); });
  return O;
}

template class BandScores<float>;
template class BandScores<double>;

}  // namespace tl
