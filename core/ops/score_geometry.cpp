#include "ops/score_geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/large_buffers.h"
#include "common/parallel.h"
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

// The band by diagonals (slot-major): row c holds slot c of every row of X, X(i, i − W + c) at position W + i,
// with W positions of −inf before row 0 and after the last row (up to max(n_q, n_k) + W), so that both
// log-sum-exp passes below read every slot as one contiguous run, whole packets across many rows or columns at
// once, with no per-row reductions: a band row holds at most 2W + 1 entries, too few to fill packets well.
template <class T>
Mat<T> diagonalBand(const Mat<T>& band, Eigen::Index nk, Eigen::Index halfWidth) {
  const Eigen::Index nq = band.rows();
  Mat<T> out = Mat<T>::Constant(band.cols(), std::max(nq, nk) + 2 * halfWidth, kNegInf<T>);
  for (Eigen::Index c = 0; c < band.cols(); ++c) out.row(c).segment(halfWidth, nq) = band.col(c).transpose();
  return out;
}

// A shift vector with W zeros before it and after it (up to the diagonal band's length): shifted(W + t) = shift(t).
// Off the support the band's own −inf decides, so the padding's value only has to be finite.
template <class T>
Eigen::Array<T, Eigen::Dynamic, 1> paddedShift(const Vec<T>& shift, Eigen::Index length, Eigen::Index halfWidth) {
  Eigen::Array<T, Eigen::Dynamic, 1> out = Eigen::Array<T, Eigen::Dynamic, 1>::Zero(length);
  out.segment(halfWidth, shift.size()) = shift.array();
  return out;
}

// log Σ_c exp(x_c(t)) for t in [0, count), where entry(c, first, n) is the run x_c(first … first + n − 1) of
// slot c. Chunks of kChunk tokens are split across threads; within a chunk, a first sweep over the slots takes
// each token's maximum and a second sums the exponentials, both as packets across tokens. Each token's terms are
// added in slot order, so the result does not depend on the thread count. A token with no finite term (inactive,
// or no support) gets −inf: shift 0 (logSumExpShift) and log 0.
template <class T, class Entry>
Vec<T> diagonalLogSumExp(Eigen::Index count, Eigen::Index slots, Entry&& entry) {
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
      for (Eigen::Index c = 0; c < slots; ++c) m = m.max(entry(c, first, n));
      m = (m == kNegInf<T>).select(T(0), m);
      sum.setZero();
      for (Eigen::Index c = 0; c < slots; ++c) sum += exactExp(entry(c, first, n) - m);
      out.segment(first, n) = (m + sum.log()).matrix();
    }
  });
  return out;
}
}  // namespace

template <class T>
DenseScores<T>::DenseScores(const Mat<T>& Q, const Mat<T>& K, T eps) : X_(scaledScores(Q, K, double(eps))) {}

template <class T>
DenseScores<T>::DenseScores(Mat<T> S, T eps) : X_(scaledScores(std::move(S), eps)) {}

template <class T>
Vec<T> DenseScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  return tl::rowLogSumExp(X_, colShift);
}

template <class T>
Vec<T> DenseScores<T>::colLogSumExp(const Vec<T>& rowShift) const {
  return tl::colLogSumExp(X_, rowShift);
}

template <class T>
RowClosurePass<T> DenseScores<T>::rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const {
  return tl::rowClosurePass(X_, colShift, logRowMarginal);
}

template <class T>
Mat<T> DenseScores<T>::plan(const Vec<T>& ut, const Vec<T>& vt, T scale, const PlanPassExtras<T>& extras) const {
  Mat<T> out;
  expPlan(X_, ut, vt, scale, out, extras);
  return out;
}

template <class T>
Mat<T> DenseScores<T>::intoPlan(const Vec<T>& ut, const Vec<T>& vt, T scale, const PlanPassExtras<T>& extras) && {
  Mat<T> out = std::move(X_);
  expPlan(out, ut, vt, scale, out, extras);
  return out;
}

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
  diagonals_ = diagonalBand(band_, nk_, W_);
}

template <class T>
BandScores<T>::BandScores(Mat<T> band, Eigen::Index nk, Eigen::Index halfWidth)
    : nq_(band.rows()), nk_(nk), W_(halfWidth), band_(std::move(band)) {
  if (band_.cols() != 2 * W_ + 1) throw std::logic_error("BandScores: a band needs 2W + 1 slots per row");
  diagonals_ = diagonalBand(band_, nk_, W_);
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
Mask BandScores<T>::activeRows() const {
  return bandActiveRows(nq_, nk_, W_);
}

template <class T>
Mask BandScores<T>::activeCols() const {
  return bandActiveCols(nq_, nk_, W_);
}

// Row i: Σ over slots c of exp(X(i, i − W + c) + colShift(i − W + c)), both runs contiguous in i.
template <class T>
Vec<T> BandScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  const auto shift = paddedShift(colShift, diagonals_.cols(), W_);
  return diagonalLogSumExp<T>(nq_, diagonals_.rows(), [&](Eigen::Index c, Eigen::Index first, Eigen::Index n) {
    return diagonals_.row(c).segment(W_ + first, n).transpose().array() + shift.segment(first + c, n);
  });
}

template <class T>
RowClosurePass<T> BandScores<T>::rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const {
  RowClosurePass<T> r;
  r.rowLse = rowLogSumExp(colShift);
  r.colLse = colLogSumExp(closure(logRowMarginal, r.rowLse));
  return r;
}

// Column j: Σ over c of exp(X(i, j) + rowShift(i)) with i = j − W + c, which is slot 2W − c of row i: both runs
// contiguous in j, so the column pass is the row pass with the slots reversed and offset.
template <class T>
Vec<T> BandScores<T>::colLogSumExp(const Vec<T>& rowShift) const {
  const auto shift = paddedShift(rowShift, diagonals_.cols(), W_);
  const Eigen::Index last = diagonals_.rows() - 1;
  return diagonalLogSumExp<T>(nk_, diagonals_.rows(), [&](Eigen::Index c, Eigen::Index first, Eigen::Index n) {
    return diagonals_.row(last - c).segment(first + c, n).transpose().array() + shift.segment(first + c, n);
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
    for (Eigen::Index r = begin; r < end; ++r) {
      const auto [j0, width] = bandPlanRow(*this, first + r, ut, vt, scale, a);
      T* row = P.row(r).data();
      const Eigen::Index bandStart = width > 0 ? j0 : nk_;
      std::fill(row, row + bandStart, T(0));
      if (width > 0) P.row(r).segment(j0, width) = a.head(width);
      std::fill(row + std::min(nk_, bandStart + width), row + nk_, T(0));
    }
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

template class DenseScores<float>;
template class DenseScores<double>;
template class BandScores<float>;
template class BandScores<double>;

}  // namespace tl
