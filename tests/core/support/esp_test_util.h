#pragma once
// Helpers shared by the ESP tests: inputs, parameters and independent reference formulas written here
// from docs/operators/esp.md (#definition: matching, costs and weights; #ties: the split plan), never taken
// from core/.
#include <algorithm>
#include <numeric>
#include <vector>

#include "ops/esp/esp.h"
#include "support/test_util.h"

namespace tl::test {

inline AttentionInput<double> espInput(int nq, int nk, int d, uint64_t seed, int dv = 3) {
  AttentionInput<double> in;
  in.Q = gaussian(nq, d, seed);
  in.K = gaussian(nk, d, seed + 1000);
  in.V = gaussian(nk, dv, seed + 2000);
  return in;
}

inline EspParams espParams(double tau, SortMode sort = SortMode::Hard, TiePolicy ties = TiePolicy::Split) {
  EspParams p;
  p.tau = tau;
  p.sort = sort;
  p.ties = ties;
  return p;
}

// Stable ascending order of a vector (ties by index, docs/operators/esp.md#ties).
inline std::vector<int> argsortAscending(const VecD& v) {
  std::vector<int> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v(a) < v(b); });
  return order;
}

// docs/operators/esp.md#definition, step 4: π(i) = ordK[rankQ(i)].
inline std::vector<int> referenceMatching(const VecD& sq, const VecD& sk) {
  const auto oq = argsortAscending(sq), ok = argsortAscending(sk);
  std::vector<int> pi(sq.size());
  for (size_t r = 0; r < oq.size(); ++r) pi[oq[r]] = ok[r];
  return pi;
}

// Smallest gap between distinct values of a vector (|Δ| > `same` counts as distinct).
inline double minGap(const VecD& v, double same = 1e-12) {
  std::vector<double> s(v.data(), v.data() + v.size());
  std::sort(s.begin(), s.end());
  double g = kInf;
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] - s[i - 1] > same) g = std::min(g, s[i] - s[i - 1]);
  return g;
}

inline double minGapOverSlices(const MatD& Q, const MatD& K) {
  double g = kInf;
  for (Eigen::Index c = 0; c < Q.cols(); ++c) g = std::min({g, minGap(Q.col(c)), minGap(K.col(c))});
  return g;
}

// Hard ESP with axis-aligned or given slices, n_q = n_k, no ties (docs/operators/esp.md#definition written
// out densely).
struct ReferenceEsp {
  MatD plan;  // A = N·G
  VecD costs, weights;
  std::vector<std::vector<int>> matchings;
};

inline ReferenceEsp referenceHardEsp(const MatD& Q, const MatD& K, const MatD& theta, double tau, double p) {
  const int n = int(Q.rows()), L = int(theta.rows());
  ReferenceEsp r;
  r.costs.resize(L);
  std::vector<MatD> perms;
  for (int l = 0; l < L; ++l) {
    const auto pi = referenceMatching(Q * theta.row(l).transpose(), K * theta.row(l).transpose());
    MatD P = MatD::Zero(n, n);
    double cost = 0;
    for (int i = 0; i < n; ++i) {
      P(i, pi[i]) = 1;
      cost += std::pow((Q.row(i) - K.row(pi[i])).norm(), p);
    }
    r.costs(l) = cost / n;  // D_l = (1/n) Σ_i ‖q_i − k_π(i)‖^p
    r.matchings.push_back(pi);
    perms.push_back(P);
  }
  const double dmin = r.costs.minCoeff();
  r.weights = (-tau * (r.costs.array() - dmin)).exp().matrix();
  r.weights /= r.weights.sum();  // w = softmax(−tau·D)
  r.plan = MatD::Zero(n, n);
  for (int l = 0; l < L; ++l) r.plan += r.weights(l) * perms[l];  // N·G = Σ w_l P_l
  return r;
}

// ties=split (docs/operators/esp.md#ties) for one slice, n_q = n_k = N: U_ij = |R(i) ∩ R(j)| /
// (N·|g(i)|·|g(j)|), R(i) the ranks of i's tie group.
inline MatD referenceSplitSlicePlan(const VecD& sq, const VecD& sk) {
  const int n = int(sq.size());
  auto rankRange = [](const VecD& v, int i) {  // [first, last] rank occupied by the values equal to v_i
    int below = 0, equal = 0;
    for (Eigen::Index j = 0; j < v.size(); ++j) {
      below += v(j) < v(i);
      equal += v(j) == v(i);
    }
    return std::pair<int, int>(below, below + equal - 1);
  };
  MatD U(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const auto [a0, a1] = rankRange(sq, i);
      const auto [b0, b1] = rankRange(sk, j);
      const int overlap = std::max(0, std::min(a1, b1) - std::max(a0, b0) + 1);
      U(i, j) = double(overlap) / (double(n) * (a1 - a0 + 1) * (b1 - b0 + 1));
    }
  return U;
}

// Matchings extra → integer rows.
inline std::vector<int> matchingRow(const MatD& matchings, int l) {
  std::vector<int> row(matchings.cols());
  for (Eigen::Index i = 0; i < matchings.cols(); ++i) row[i] = int(matchings(l, i));
  return row;
}

inline MatD permutationMatrix(const std::vector<int>& perm) {  // (Π X) row i = X row perm[i]
  MatD P = MatD::Zero(Eigen::Index(perm.size()), Eigen::Index(perm.size()));
  for (size_t i = 0; i < perm.size(); ++i) P(Eigen::Index(i), perm[i]) = 1;
  return P;
}

}  // namespace tl::test
