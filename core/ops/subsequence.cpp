#include "ops/subsequence.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace tl {
std::vector<Eigen::Index> validIndices(const Mask& mask) {
  std::vector<Eigen::Index> idx;
  for (Eigen::Index i = 0; i < mask.size(); ++i)
    if (mask(i)) idx.push_back(i);
  return idx;
}

template <class T>
Mat<T> takeRows(const Mat<T>& m, const std::vector<Eigen::Index>& rows) {
  Mat<T> out(Eigen::Index(rows.size()), m.cols());
  for (size_t r = 0; r < rows.size(); ++r) out.row(Eigen::Index(r)) = m.row(rows[r]);
  return out;
}

template <class T>
Mat<T> scatterRows(const Mat<T>& sub, const std::vector<Eigen::Index>& rows, Eigen::Index n, T fill) {
  Mat<T> out = Mat<T>::Constant(n, sub.cols(), fill);
  for (size_t r = 0; r < rows.size(); ++r) out.row(rows[r]) = sub.row(Eigen::Index(r));
  return out;
}

namespace {

template <class T>
AttentionInput<T> validInput(const AttentionInput<T>& input, const std::vector<Eigen::Index>& idx) {
  AttentionInput<T> sub;
  sub.Q = takeRows(input.Q, idx);
  sub.K = takeRows(input.K, idx);
  if (input.V) sub.V = takeRows(*input.V, idx);
  return sub;
}

// Scatters a length-n_valid vector into length n, filling padded slots with `fill`.
template <class T>
Vec<T> scatter(const Vec<T>& sub, const std::vector<Eigen::Index>& idx, Eigen::Index n, T fill) {
  Vec<T> out = Vec<T>::Constant(n, fill);
  for (size_t r = 0; r < idx.size(); ++r) out(idx[r]) = sub(Eigen::Index(r));
  return out;
}

// Scatters the columns of a history matrix (one row per step).
template <class T>
Mat<T> scatterColumns(const Mat<T>& sub, const std::vector<Eigen::Index>& idx, Eigen::Index n, T fill) {
  Mat<T> out = Mat<T>::Constant(sub.rows(), n, fill);
  for (size_t c = 0; c < idx.size(); ++c) out.col(idx[c]) = sub.col(Eigen::Index(c));
  return out;
}

// A plan over the valid tokens seen over all n tokens: padded rows and columns are 0. Structured plans stay
// structured (their products gather and scatter rows); dense ones are widened once.
template <class T>
class ScatteredPlan final : public TransportPlan<T> {
 public:
  ScatteredPlan(Plan<T> valid, std::vector<Eigen::Index> idx, Eigen::Index n)
      : valid_(std::move(valid)), idx_(std::move(idx)), n_(n) {}
  Eigen::Index rows() const override { return n_; }
  Eigen::Index cols() const override { return n_; }
  Mat<T> apply(const Mat<T>& V) const override { return scatterRows<T>(valid_.apply(takeRows(V, idx_)), idx_, n_); }
  Mat<T> applyTransposed(const Mat<T>& W) const override {
    return scatterRows<T>(valid_.applyTransposed(takeRows(W, idx_)), idx_, n_);
  }
  Mat<T> materialize() const override { return widened(valid_.dense(), idx_, n_); }
  // The valid rows in [first, first + count) are consecutive valid indices [a, b): their rows, widened.
  Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const override {
    const auto a = Eigen::Index(std::lower_bound(idx_.begin(), idx_.end(), first) - idx_.begin());
    const auto b = Eigen::Index(std::lower_bound(idx_.begin(), idx_.end(), first + count) - idx_.begin());
    Mat<T> out = Mat<T>::Zero(count, n_);
    if (b == a) return out;
    const Mat<T> valid = valid_.rowBlock(a, b - a);
    for (Eigen::Index k = a; k < b; ++k)
      for (size_t c = 0; c < idx_.size(); ++c) out(idx_[size_t(k)] - first, idx_[c]) = valid(k - a, Eigen::Index(c));
    return out;
  }
  bool forEachStoredEntry(const EntryVisitor<T>& visit) const override {
    // Valid indices → token indices (increasing: the order holds).
    return valid_.forEachStoredEntry(
        [&](const PlanEntry<T>& e) { visit({idx_[size_t(e.row)], idx_[size_t(e.col)], e.value}); });
  }
  const char* kind() const override { return valid_.kind(); }

  static Mat<T> widened(const Mat<T>& A, const std::vector<Eigen::Index>& idx, Eigen::Index n) {
    Mat<T> out = Mat<T>::Zero(n, n);
    for (size_t a = 0; a < idx.size(); ++a)
      for (size_t b = 0; b < idx.size(); ++b) out(idx[a], idx[b]) = A(Eigen::Index(a), Eigen::Index(b));
    return out;
  }

 private:
  Plan<T> valid_;
  std::vector<Eigen::Index> idx_;
  Eigen::Index n_;
};

template <class T>
Plan<T> scatteredPlan(const Plan<T>& valid, const std::vector<Eigen::Index>& idx, Eigen::Index n) {
  if (valid.empty()) return {};
  if (valid.isDense()) return Plan<T>(ScatteredPlan<T>::widened(valid.dense(), idx, n));
  return Plan<T>(std::make_shared<const ScatteredPlan<T>>(valid, idx, n));
}

}  // namespace

template <class T>
PlanResult<T> runOnValidSubsequence(const AttentionInput<T>& input, const PlanFunction<T>& run) {
  if (!input.mask) return run(input);  // no copy of Q, K and V on the common path
  if (input.mask->all()) {
    AttentionInput<T> unmasked = input;
    unmasked.mask.reset();
    return run(unmasked);
  }
  const auto idx = validIndices(*input.mask);
  const Eigen::Index n = input.K.rows();
  PlanResult<T> r = run(validInput(input, idx));
  const T negInf = -std::numeric_limits<T>::infinity();

  PlanResult<T> out;
  out.plan = scatteredPlan(r.plan, idx, n);
  if (r.output) out.output = scatterRows<T>(*r.output, idx, n);
  // Padded tokens carry no mass: -inf duals (zero marginal), never -inf with a log-0 marginal elsewhere.
  if (r.u.size()) out.u = scatter<T>(r.u, idx, n, negInf);
  if (r.v.size()) out.v = scatter<T>(r.v, idx, n, negInf);
  if (r.uHistory.size()) out.uHistory = scatterColumns<T>(r.uHistory, idx, n, negInf);
  if (r.vHistory.size()) out.vHistory = scatterColumns<T>(r.vHistory, idx, n, negInf);
  out.rowTarget = scatter<T>(r.rowTarget, idx, n, T(0));
  out.colTarget = scatter<T>(r.colTarget, idx, n, T(0));
  // Padded rows/columns are exactly 0 = their target, so maxima stay and means are diluted by n_valid/n.
  const double share = double(idx.size()) / double(n);
  auto widen = [share](MarginalErrors e) {
    e.rowMean *= share;
    e.colMean *= share;
    return e;
  };
  for (const auto& e : r.errorHistory) out.errorHistory.push_back(widen(e));
  out.errors = widen(r.errors);
  out.massMismatch = r.massMismatch;
  out.seconds = r.seconds;
  out.backend = r.backend;
  out.backendNote = r.backendNote;
  out.extras = std::move(r.extras);
  return out;
}

template Mat<float> takeRows(const Mat<float>&, const std::vector<Eigen::Index>&);
template Mat<double> takeRows(const Mat<double>&, const std::vector<Eigen::Index>&);
template Mat<float> scatterRows(const Mat<float>&, const std::vector<Eigen::Index>&, Eigen::Index, float);
template Mat<double> scatterRows(const Mat<double>&, const std::vector<Eigen::Index>&, Eigen::Index, double);
template PlanResult<float> runOnValidSubsequence(const AttentionInput<float>&, const PlanFunction<float>&);
template PlanResult<double> runOnValidSubsequence(const AttentionInput<double>&, const PlanFunction<double>&);

}  // namespace tl
