#pragma once
// Log-sum-exp along rows and columns of the scaled score matrix X = S/eps, with per-column (resp. per-row)
// potentials added in the exponent. Shared by every Sinkhorn-type half-step and c-transform.
// -inf entries (masked keys) are safe: an all -inf set uses max 0 (docs/conventions.md#log-domain), giving
// -inf.
#include <cmath>
#include <limits>

#include "common/matrix.h"
#include "common/packet_exp.h"

namespace tl {

// exp for Eigen expressions, vectorised by packetExp (common/packet_exp.h) rather than Eigen's pexp: it is
// faster, and exp(-inf) is exactly 0 (Eigen 3.4's pexp gives a denormal, which would leave masked plan entries
// and targets "almost 0"). The inner loop of every log-domain operator.
template <class T>
struct ExactExpOp {
  T operator()(const T& x) const { return std::exp(x); }  // std::exp(-inf) is exactly 0
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    return packetExp(x);
  }
};

}  // namespace tl

template <class T>
struct Eigen::internal::functor_traits<tl::ExactExpOp<T>> {
  enum { Cost = functor_traits<scalar_exp_op<T>>::Cost, PacketAccess = packet_traits<T>::HasExp };
};

namespace tl {

template <class Derived>
auto exactExp(const Eigen::ArrayBase<Derived>& x) {
  return x.unaryExpr(ExactExpOp<typename Derived::Scalar>());
}

// The shift of a log-sum-exp whose largest term is `max`: the max itself, or 0 when every term is -inf (all
// masked), so that exp(x - shift) never sees -inf - (-inf) = NaN; the sum is then 0 and its log -inf.
template <class T>
T logSumExpShift(T max) {
  return max == -std::numeric_limits<T>::infinity() ? T(0) : max;
}

// out_i = log sum_j exp(X_ij + colShift_j)
template <class T>
Vec<T> rowLogSumExp(const Mat<T>& X, const Vec<T>& colShift);

// out_j = log sum_i exp(X_ij + rowShift_i); walks X row by row (row-major friendly).
template <class T>
Vec<T> colLogSumExp(const Mat<T>& X, const Vec<T>& rowShift);

// A closure: potential = log marginal − LSE, and −inf (never NaN) on inactive tokens (log marginal −inf).
template <class T>
T closedPotential(T logMarginal, T lse) {
  return logMarginal == -std::numeric_limits<T>::infinity() ? logMarginal : logMarginal - lse;
}
template <class T>
Vec<T> closure(const Vec<T>& logMarginal, const Vec<T>& lse) {
  return logMarginal.binaryExpr(lse, [](T m, T l) { return closedPotential(m, l); });
}

// A row closure and the column log-sum-exp that follows it, from one pass over X: rowLse_i = log Σ_j exp(X_ij +
// colShift_j), the closure u_i = closedPotential(logRowMarginal_i, rowLse_i), and colLse_j = log Σ_i exp(X_ij + u_i).
// Why: a column log-sum-exp pass reads X from memory again and takes an exponential per entry; here each row's
// exponentials exp(X_ij + colShift_j − max_i), already in cache for its row sum, times exp(u_i + max_i) are the
// new plan's entries exp(X_ij + u_i + colShift_j), summed down the columns (colLse_j = log of that sum −
// colShift_j). The sums run over fixed blocks of rows in a fixed order, so the result is the same on any number
// of threads. Where those linear sums could lose precision to underflow (a column whose total is below
// sqrt(T's smallest normal), or a row's factor exp(u_i + max_i) that is not finite), colLse is the exact
// colLogSumExp over u instead; −inf on columns with colShift_j = −inf (they carry no mass).
template <class T>
struct RowClosurePass {
  Vec<T> rowLse, colLse;
};
template <class T>
RowClosurePass<T> rowClosurePass(const Mat<T>& X, const Vec<T>& colShift, const Vec<T>& logRowMarginal);

// The end of a row-closure pass: colLse_j = log(sums_j) − colShift_j from the column sums of the new plan's entries
// exp(X_ij + u_i + colShift_j) that the pass accumulated, −inf where colShift_j = −inf. Returns false, colLse left
// unspecified, where an active column's sum is below sqrt(T's smallest normal) (its linear sum may have lost
// precision to underflow): the caller then takes the exact column pass.
template <class T>
bool columnLseFromSums(const Eigen::Array<T, Eigen::Dynamic, 1>& sums, const Vec<T>& colShift, Vec<T>& colLse);
// colLse with −inf on the columns whose shift is −inf (they carry no mass): how a row-closure pass returns them
// from its exact column pass too, as from its one pass.
template <class T>
Vec<T> withMaskedColumns(Vec<T> colLse, const Vec<T>& colShift) {
  const T negInf = -std::numeric_limits<T>::infinity();
  for (Eigen::Index j = 0; j < colLse.size(); ++j)
    if (colShift(j) == negInf) colLse(j) = negInf;
  return colLse;
}

// What the pass that forms a plan computes besides it, from each block of rows while it is still in cache: a caller
// that reports the plan's marginals, or needs its output A·V, reads the n_q × n_k plan no second time for them.
template <class T>
struct PlanPassExtras {
  Vec<T>* rowSums = nullptr;      // the plan's row sums
  const Mat<T>* values = nullptr;  // with `output`: output = plan · values, the same bits as rowProduct(plan, values)
  Mat<T>* output = nullptr;
};

// out = scale · exp(X + ut ⊕ vt), i.e. out_ij = scale · exp(X_ij + ut_i + vt_j) (−inf gives exactly 0): the plan
// of a log-domain problem from its potentials in eps units. `out` is resized only when its shape differs, so a
// loop that forms the plan every step reuses one buffer; it may be X itself (entry by entry, so in place is safe).
// Row by row and split across threads: a broadcast of ut across a row-major matrix has no packet access, and Eigen
// would evaluate the whole expression, exp included, one scalar at a time.
template <class T>
void expPlan(const Mat<T>& X, const Vec<T>& ut, const Vec<T>& vt, T scale, Mat<T>& out,
             const PlanPassExtras<T>& extras = {});

// S = Q Kᵀ / sqrt(d) (docs/conventions.md#scores), formed block by block across threads (ops/score_blocks.h).
template <class T>
Mat<T> scores(const Mat<T>& Q, const Mat<T>& K);

// X = S/eps, refused with an InvalidArgument before any iteration when S or X is not finite, or when |X| is so
// large that X plus two potentials of its size could overflow T (docs/conventions.md#overflow). `maxAbsScore` is
// max |S_ij| (NaN or inf when QKᵀ itself overflowed); the message names it, eps and what to change.
template <class T>
void checkScaledScores(T maxAbsScore, double eps);
template <class T>
Mat<T> scaledScores(Mat<T> S, double eps);  // S/eps after checkScaledScores, in S's buffer
// The same X = (QKᵀ/√d)/eps with the same roundings, formed block of rows by block of rows with the scaling and
// the check done on each block while it is in cache (ops/score_blocks.h), split across threads.
template <class T>
Mat<T> scaledScores(const Mat<T>& Q, const Mat<T>& K, double eps);
// The same check where S is never formed on the host (the device paths): |S_ij| ≤ max‖q_i‖·max‖k_j‖/√d
// (Cauchy–Schwarz) stands in for max |S|, so a refusal can come slightly early, never late.
template <class T>
void checkScaledScoreBound(const Mat<T>& Q, const Mat<T>& K, double eps);

// Refuses dense n_q × n_k work beyond `bytesLimit` with a ResourceError that says how much it needs.
void checkDenseSize(long long nQueries, long long nKeys, size_t bytesPerEntry, const char* what);

}  // namespace tl
