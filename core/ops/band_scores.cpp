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

// log Σ_c exp(x_c(t)) for tokens t in [0, count), where runs(c, first, n, add) calls add(at, x) with the run x of
// slot c's terms for tokens first + at … first + at + x.size() − 1 (within [first, first + n); none if the slot has
// no support there). Chunks of kChunk tokens are split across threads; within a chunk, a first sweep over the
// slots takes each token's maximum and a second sums the exponentials, both as packets across tokens, with no
// per-token reductions: a band row holds at most 2W + 1 entries, too few to fill packets well. Each token's terms
// are added in slot order, so the result does not depend on the thread count. A token with no term (no support)
// or no finite one (inactive) gets −inf: shift 0 (logSumExpShift) and log 0.
template <class T, class Runs>
Vec<T> diagonalLogSumExp(Eigen::Index count, Eigen::Index slots, Runs&& runs) {
  constexpr Eigen::Index kChunk = 256;
  Vec<T> out(count);
  const Eigen::Index chunks = (count + kChunk - 1) / kChunk;
  parallelFor(chunks, double(count) * double(slots), [&](Eigen::Index firstChunk, Eigen::Index endChunk) {
    Eigen::Array<T, Eigen::Dynamic, 1> maxima(kChunk), sums(kChunk);
    for (Eigen::Index chunk = firstChunk; chunk < endChunk; ++chunk) {
      const Eigen::Index first = chunk * kChunk, n = std::min(kChunk, count - first);
      auto m = maxima.head(n);
      auto sum = sums.head(n);
      m.setConstant(kNegInf<T>);
      for (Eigen::Index c = 0; c < slots; ++c)
        runs(c, first, n, [&](Eigen::Index at, const auto& x) {
          auto slotMax = m.segment(at, x.size());
          slotMax = slotMax.max(x);
        });
      m = (m == kNegInf<T>).select(T(0), m);
      sum.setZero();
      for (Eigen::Index c = 0; c < slots; ++c)
        runs(c, first, n, [&](Eigen::Index at, const auto& x) {
          sum.segment(at, x.size()) += exactExp(x - m.segment(at, x.size()));
        });
      out.segment(first, n) = (m + sum.log()).matrix();
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
    : nq_(Q.rows()), nk_(K.rows()), W_(halfWidth), band_(Mat<T>::Constant(Q.rows(), 2 * halfWidth + 1, kNegInf<T>)) {
  const T root = std::sqrt(T(Q.cols()));
  // Row i's scores are one matrix-vector product with the keys it reaches; rows split across threads. Each row
  // records its largest |score|, +inf if one is not finite, for the overflow check.
  Vec<T> rowMaxAbs = Vec<T>::Zero(nq_);
  parallelFor(nq_, double(band_.size()) * double(Q.cols()), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index i = first; i < end; ++i) {
      const Eigen::Index b0 = firstSlot(i), width = lastSlot(i) - b0 + 1;
      if (width <= 0) continue;
      auto scores = band_.row(i).segment(b0, width);
      scores.noalias() = Q.row(i) * K.middleRows(i - W_ + b0, width).transpose();
      scores /= root;
      rowMaxAbs(i) = scores.allFinite() ? scores.cwiseAbs().maxCoeff() : std::numeric_limits<T>::infinity();
    }
  });
  checkScaledScores(rowMaxAbs.maxCoeff(), double(eps));
  band_ /= eps;  // off-band slots stay −inf
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
  for (Eigen::Index c = 0; c < band_.cols(); ++c) {
    const auto [first, end] = slotRows(c);
    diagonal(c) = band_.col(c).segment(first, end - first);
  }
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
Vec<T> BandScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  return diagonalLogSumExp<T>(nq_, band_.cols(), [&](Eigen::Index c, Eigen::Index first, Eigen::Index n, auto&& add) {
    const auto [slotFirst, slotEnd] = slotRows(c);
    const Eigen::Index from = std::max(first, slotFirst), to = std::min(first + n, slotEnd);
    if (from < to)
      add(from - first, diagonal(c).segment(from - slotFirst, to - from).array() +
                            colShift.segment(from - W_ + c, to - from).array());
  });
}

template <class T>
RowClosurePass<T> BandScores<T>::rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const {
  RowClosurePass<T> r;
  r.rowLse = rowLogSumExp(colShift);
  r.colLse = colLogSumExp(closure(logRowMarginal, r.rowLse));
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
void BandScores<T>::forEachEntry(const Vec<T>& ut, const Vec<T>& vt, T scale, Visit&& visit, Eigen::Index first,
                                 Eigen::Index end) const {
  for (Eigen::Index i = first; i < (end < 0 ? nq_ : end); ++i) {
    if (ut(i) == kNegInf<T>) continue;
    for (Eigen::Index b = firstSlot(i); b <= lastSlot(i); ++b) {
      const Eigen::Index j = i - W_ + b;
      if (vt(j) != kNegInf<T>) visit(i, j, scale * std::exp(band_(i, b) + ut(i) + vt(j)));
    }
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
std::vector<PlanEntry<T>> BandScores<T>::entries(const Vec<T>& ut, const Vec<T>& vt, T scale) const {
  std::vector<PlanEntry<T>> out;
  forEachEntry(ut, vt, scale, [&](Eigen::Index i, Eigen::Index j, T a) { out.push_back({i, j, a}); });
  return out;
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
