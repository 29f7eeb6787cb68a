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
  T maxAbsScore = 0;
  bool finite = true;
  for (Eigen::Index i = 0; i < nq_; ++i)
    for (Eigen::Index b = firstSlot(i); b <= lastSlot(i); ++b) {
      const T score = Q.row(i).dot(K.row(i - W_ + b)) / root;
      finite = finite && std::isfinite(score);
      maxAbsScore = std::max(maxAbsScore, std::abs(score));
      band_(i, b) = score;
    }
  checkScaledScores(finite ? maxAbsScore : std::numeric_limits<T>::infinity(), double(eps));
  band_ /= eps;  // off-band slots stay −inf
}

template <class T>
BandScores<T>::BandScores(Mat<T> band, Eigen::Index nk, Eigen::Index halfWidth)
    : nq_(band.rows()), nk_(nk), W_(halfWidth), band_(std::move(band)) {
  if (band_.cols() != 2 * W_ + 1) throw std::logic_error("BandScores: a band needs 2W + 1 slots per row");
}

template <class T>
Eigen::Index BandScores<T>::firstSlot(Eigen::Index i) const {
  return std::max<Eigen::Index>(0, W_ - i);
}

template <class T>
Eigen::Index BandScores<T>::lastSlot(Eigen::Index i) const {
  return std::min<Eigen::Index>(2 * W_, nk_ - 1 - i + W_);
}

template <class T>
Mask BandScores<T>::activeRows() const {
  return bandActiveRows(nq_, nk_, W_);
}

template <class T>
Mask BandScores<T>::activeCols() const {
  return bandActiveCols(nq_, nk_, W_);
}

// A row's support is slots [firstSlot(i), lastSlot(i)] of band_, columns i − W + firstSlot(i) onwards: both
// band passes read those contiguous segments as packets (off-support and inactive entries are −inf and add
// exp(−inf) = 0), rows split across threads.
template <class T>
Vec<T> BandScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  Vec<T> out(nq_);
  parallelFor(nq_, double(band_.size()), [&](Eigen::Index first, Eigen::Index end) {
    Eigen::Array<T, 1, Eigen::Dynamic> row(band_.cols());
    for (Eigen::Index i = first; i < end; ++i) {
      const Eigen::Index b0 = firstSlot(i), width = lastSlot(i) - b0 + 1;
      if (width <= 0) {
        out(i) = kNegInf<T>;  // no support: an inactive row
        continue;
      }
      auto x = row.head(width);
      x = band_.row(i).segment(b0, width).array() + colShift.segment(i - W_ + b0, width).transpose().array();
      const T m = x.maxCoeff();
      out(i) = m == kNegInf<T> ? kNegInf<T> : m + std::log(exactExp(x - m).sum());
    }
  });
  return out;
}

template <class T>
RowClosurePass<T> BandScores<T>::rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const {
  RowClosurePass<T> r;
  r.rowLse = rowLogSumExp(colShift);
  r.colLse = colLogSumExp(closure(logRowMarginal, r.rowLse));
  return r;
}

// Column j's support is spread over rows j − W … j + W, so each thread owns a range of columns and walks the rows
// that reach it, adding each row's segment (clipped to the range) into running column maxima, then into the sums.
template <class T>
Vec<T> BandScores<T>::colLogSumExp(const Vec<T>& rowShift) const {
  Vec<T> out(nk_);
  parallelFor(nk_, double(band_.size()), [&](Eigen::Index c0, Eigen::Index c1) {
    using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
    Row colMax = Row::Constant(c1 - c0, kNegInf<T>), sum = Row::Zero(c1 - c0);
    const Eigen::Index i0 = std::max<Eigen::Index>(0, c0 - W_), i1 = std::min(nq_, c1 + W_);
    // visit(columnOffset, width, x): the support entries of row i in [c0, c1), as X plus the row's shift.
    auto forRows = [&](auto&& visit) {
      for (Eigen::Index i = i0; i < i1; ++i) {
        if (rowShift(i) == kNegInf<T>) continue;
        const Eigen::Index j0 = std::max(c0, i - W_ + firstSlot(i)), j1 = std::min(c1, i - W_ + lastSlot(i) + 1);
        if (j1 > j0) visit(j0 - c0, j1 - j0, band_.row(i).segment(j0 - i + W_, j1 - j0).array() + rowShift(i));
      }
    };
    forRows([&](Eigen::Index at, Eigen::Index width, const auto& x) {
      colMax.segment(at, width) = colMax.segment(at, width).max(x);
    });
    const Row shift = (colMax == kNegInf<T>).select(T(0), colMax);
    forRows([&](Eigen::Index at, Eigen::Index width, const auto& x) {
      sum.segment(at, width) += exactExp(x - shift.segment(at, width));
    });
    out.segment(c0, c1 - c0) = (colMax == kNegInf<T>).select(kNegInf<T>, shift + sum.log()).transpose().matrix();
  });
  return out;
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
  P.setZero();
  parallelFor(count, double(count) * double(band_.cols()), [&](Eigen::Index begin, Eigen::Index end) {
    Eigen::Matrix<T, 1, Eigen::Dynamic> a(band_.cols());
    for (Eigen::Index r = begin; r < end; ++r) {
      const auto [j0, width] = bandPlanRow(*this, first + r, ut, vt, scale, a);
      if (width > 0) P.row(r).segment(j0, width) = a.head(width);
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
