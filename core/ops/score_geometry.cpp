#include "ops/score_geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "common/parallel.h"
#include "ops/log_domain.h"

namespace tl {
namespace {
template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// Running (max, sum) of a log-sum-exp accumulated term by term; −inf safe (docs/conventions.md#log-domain).
template <class T>
struct OnlineLse {
  T max = kNegInf<T>;
  T sum = 0;
  void add(T x) {
    if (x == kNegInf<T>) return;
    if (x > max) {
      sum = sum * std::exp(max - x) + 1;
      max = x;
    } else {
      sum += std::exp(x - max);
    }
  }
  T value() const { return max == kNegInf<T> ? kNegInf<T> : max + std::log(sum); }
};
}  // namespace

template <class T>
DenseScores<T>::DenseScores(const Mat<T>& Q, const Mat<T>& K, T eps) : DenseScores(scores(Q, K), eps) {}

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
Mat<T> DenseScores<T>::plan(const Vec<T>& ut, const Vec<T>& vt, T scale) const {
  Mat<T> out(X_.rows(), X_.cols());
  // Row by row: a broadcast of ut across a row-major matrix has no packet access, and Eigen would then
  // evaluate the whole expression, exp included, one scalar at a time.
  parallelFor(X_.rows(), double(X_.size()), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index i = first; i < end; ++i)
      out.row(i) = scale * exactExp((X_.row(i).array() + ut(i)) + vt.transpose().array());
  });
  return out;
}

template <class T>
Mat<T> DenseScores<T>::apply(const Vec<T>& ut, const Vec<T>& vt, T scale, const Mat<T>& V) const {
  return plan(ut, vt, scale) * V;
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
Eigen::Index BandScores<T>::firstSlot(Eigen::Index i) const {
  return std::max<Eigen::Index>(0, W_ - i);
}

template <class T>
Eigen::Index BandScores<T>::lastSlot(Eigen::Index i) const {
  return std::min<Eigen::Index>(2 * W_, nk_ - 1 - i + W_);
}

template <class T>
Mask BandScores<T>::activeRows() const {
  Mask m(nq_);
  for (Eigen::Index i = 0; i < nq_; ++i) m(i) = firstSlot(i) <= lastSlot(i);
  return m;
}

template <class T>
Mask BandScores<T>::activeCols() const {
  Mask m = Mask::Zero(nk_);
  for (Eigen::Index j = 0; j < nk_; ++j) m(j) = j - W_ < nq_;  // some row i with |i − j| ≤ W exists
  return m;
}

template <class T>
Vec<T> BandScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  Vec<T> out(nq_);
  for (Eigen::Index i = 0; i < nq_; ++i) {
    OnlineLse<T> lse;
    for (Eigen::Index b = firstSlot(i); b <= lastSlot(i); ++b) lse.add(band_(i, b) + colShift(i - W_ + b));
    out(i) = lse.value();
  }
  return out;
}

template <class T>
Vec<T> BandScores<T>::colLogSumExp(const Vec<T>& rowShift) const {
  std::vector<OnlineLse<T>> lse(static_cast<size_t>(nk_));
  for (Eigen::Index i = 0; i < nq_; ++i) {
    if (rowShift(i) == kNegInf<T>) continue;
    for (Eigen::Index b = firstSlot(i); b <= lastSlot(i); ++b)
      lse[size_t(i - W_ + b)].add(band_(i, b) + rowShift(i));
  }
  Vec<T> out(nk_);
  for (Eigen::Index j = 0; j < nk_; ++j) out(j) = lse[size_t(j)].value();
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
  Mat<T> P = Mat<T>::Zero(count, nk_);
  forEachEntry(
      ut, vt, scale, [&](Eigen::Index i, Eigen::Index j, T a) { P(i - first, j) = a; }, first, first + count);
  return P;
}

template <class T>
std::vector<PlanEntry<T>> BandScores<T>::entries(const Vec<T>& ut, const Vec<T>& vt, T scale) const {
  std::vector<PlanEntry<T>> out;
  forEachEntry(ut, vt, scale, [&](Eigen::Index i, Eigen::Index j, T a) { out.push_back({i, j, a}); });
  return out;
}

template <class T>
Mat<T> BandScores<T>::apply(const Vec<T>& ut, const Vec<T>& vt, T scale, const Mat<T>& V) const {
  Mat<T> O = Mat<T>::Zero(nq_, V.cols());
  forEachEntry(ut, vt, scale, [&](Eigen::Index i, Eigen::Index j, T a) { O.row(i) += a * V.row(j); });
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
