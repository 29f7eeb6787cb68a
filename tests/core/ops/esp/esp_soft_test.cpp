// ESP attention, soft sorting: SoftSort and the soft-mode checks of docs/operators/esp.md#checks, and
// the symmetries that also hold in soft mode (entries in [0, 1]; closeness to the hard plan governed by
// sort_temp/g², docs/operators/esp.md#soft-sorting). The reference soft plan is written out here (two-pass
// weights), so the operator's streamed accumulation is checked against it.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/esp/soft_sort.h"
#include "support/esp_test_util.h"

namespace tl {
namespace {

using test::espInput;
using test::espParams;
using test::gaussian;
using test::matricesNear;
using test::near;

// SoftSort (docs/operators/esp.md#soft-sorting) with ascending anchors, written entry by entry.
MatD referenceSoftSort(const VecD& v, double t) {
  std::vector<double> sorted(v.data(), v.data() + v.size());
  std::sort(sorted.begin(), sorted.end());
  MatD P(v.size(), v.size());
  for (Eigen::Index r = 0; r < v.size(); ++r) {
    double z = 0;
    for (Eigen::Index j = 0; j < v.size(); ++j) z += std::exp(-std::pow(sorted[r] - v(j), 2) / t);
    for (Eigen::Index j = 0; j < v.size(); ++j) P(r, j) = std::exp(-std::pow(sorted[r] - v(j), 2) / t) / z;
  }
  return P;
}

// The soft plan for n_q = n_k, axis slices: U_l = (1/N) A_lᵀ B_l, D_l = <C, U_l>, two-pass weights,
// A = N Σ w_l U_l.
struct ReferenceSoft {
  MatD plan;
  VecD costs, weights;
};
ReferenceSoft referenceSoftEsp(const MatD& Q, const MatD& K, double tau, double t) {
  const int n = int(Q.rows()), L = int(Q.cols());
  MatD C(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) C(i, j) = (Q.row(i) - K.row(j)).squaredNorm();
  ReferenceSoft r;
  r.costs.resize(L);
  std::vector<MatD> U;
  for (int l = 0; l < L; ++l) {
    U.push_back(referenceSoftSort(Q.col(l), t).transpose() * referenceSoftSort(K.col(l), t) / double(n));
    r.costs(l) = (C.array() * U.back().array()).sum();
  }
  r.weights = (-tau * (r.costs.array() - r.costs.minCoeff())).exp().matrix();
  r.weights /= r.weights.sum();
  r.plan = MatD::Zero(n, n);
  for (int l = 0; l < L; ++l) r.plan += double(n) * r.weights(l) * U[l];
  return r;
}

// Rows sum to 1, entries in [0, 1], the anchor is the row max, P v ≈ sort(v).
TEST(SoftSort, Properties) {
  const VecD v = gaussian(15, 1, 3).col(0);
  const double g = test::minGap(v);
  for (double t : {1.0, 0.1, 1e-3, 1e-6}) {
    SCOPED_TRACE(::testing::Message() << "t=" << t);
    const MatD P = softSort<double>(v, t);
    EXPECT_TRUE(matricesNear(P, referenceSoftSort(v, t), 1e-12));
    EXPECT_TRUE(matricesNear(P.rowwise().sum(), VecD::Ones(15), 1e-12));
    EXPECT_GE(P.minCoeff(), 0.0);
    EXPECT_LE(P.maxCoeff(), 1.0);
    const auto order = test::argsortAscending(v);
    VecD sorted(15);
    for (int r = 0; r < 15; ++r) {
      sorted(r) = v(order[r]);
      EXPECT_EQ(P(r, order[r]), P.row(r).maxCoeff()) << "anchor of rank " << r;
    }
    const double bound = 2 * 15 * v.cwiseAbs().maxCoeff() * std::exp(-g * g / t);
    EXPECT_LE((P * v - sorted).cwiseAbs().maxCoeff(), bound + 1e-12);
    const MatF P32 = softSort<float>(v.cast<float>(), t);
    EXPECT_TRUE(matricesNear(P32.rowwise().sum().cast<double>(), VecD::Ones(15), 1e-6));
  }
}

// The streamed soft plan equals the two-pass reference; costs and weights too.
TEST(EspSoft, EqualsTwoPassReference) {
  for (double t : {1.0, 0.1, 1e-3})
    for (double tau : {0.0, 0.5, 5.0}) {
      SCOPED_TRACE(::testing::Message() << "t=" << t << " tau=" << tau);
      const auto in = espInput(11, 11, 4, 7);
      EspParams p = espParams(tau, SortMode::Soft);
      p.sortTemp = t;
      const auto r = espAttention(in, p);
      const auto ref = referenceSoftEsp(in.Q, in.K, tau, t);
      EXPECT_TRUE(matricesNear(r.plan.dense(), ref.plan, 1e-12));
      EXPECT_TRUE(matricesNear(r.extras.at(EspExtras::costs).col(0), ref.costs, 1e-12));
      EXPECT_TRUE(matricesNear(r.extras.at(EspExtras::weights).col(0), ref.weights, 1e-12));
      EXPECT_TRUE(matricesNear(*r.output, ref.plan * *in.V, 1e-12));
    }
}

// The hand-computed example's soft numbers (t = 0.5, tau = 1, p = 2), printed to 10 digits.
TEST(EspSoft, GoldenExample) {
  AttentionInput<double> in;
  in.Q = (MatD(4, 2) << 0, 3, 1, 0, 2, 2, 3, 1).finished();
  in.K = (MatD(4, 2) << 0.5, 1, 2.5, 0, 1.5, 3, 3.5, 2).finished();
  EspParams p = espParams(1, SortMode::Soft);
  p.sortTemp = 0.5;
  const auto r = espAttention(in, p);
  EXPECT_TRUE(matricesNear(r.extras.at(EspExtras::costs).col(0),
                           VecD((VecD(2) << 3.837602295, 3.3195319724).finished()), 1e-9));
  EXPECT_TRUE(matricesNear(r.extras.at(EspExtras::weights).col(0),
                           VecD((VecD(2) << 0.3733035674, 0.6266964326).finished()), 1e-10));
  EXPECT_TRUE(matricesNear(r.plan.dense().rowwise().sum(),
                           VecD((VecD(4) << 0.9872797061, 0.9967767683, 1.0127202939, 1.0032232317).finished()),
                           1e-10));
  EXPECT_TRUE(matricesNear(r.plan.dense().colwise().sum().transpose(),
                           VecD((VecD(4) << 1.0032232317, 0.9967767683, 0.9967767683, 1.0032232317).finished()),
                           1e-10));
  EXPECT_TRUE(near(r.errors.rowMax, 1.0127202939 - 1, 1e-10));  // reported honestly, not as doubly stochastic
  EXPECT_TRUE(near(r.errors.colMax, 0.0032232317, 1e-10));
}

// One slice: row sums of A are colsum(R^Q), column sums colsum(R^K); total mass is exact.
TEST(EspSoft, MarginalIdentity) {
  const auto in = espInput(9, 9, 1, 17);
  EspParams p = espParams(0.2, SortMode::Soft);
  p.sortTemp = 0.3;
  const auto r = espAttention(in, p);
  const MatD RQ = referenceSoftSort(in.Q.col(0), 0.3), RK = referenceSoftSort(in.K.col(0), 0.3);
  EXPECT_TRUE(matricesNear(r.plan.dense().rowwise().sum(), RQ.colwise().sum().transpose(), 1e-12));
  EXPECT_TRUE(matricesNear(r.plan.dense().colwise().sum().transpose(), RK.colwise().sum().transpose(), 1e-12));
  const auto many = espAttention(espInput(9, 9, 6, 18), p);
  EXPECT_TRUE(near(many.plan.dense().sum(), 9.0, 1e-12));
  EXPECT_GT(many.errors.rowMax, 1e-3);
  EXPECT_GT(many.errors.colMax, 1e-3);
}

// For p = 2, D_l = (1/N)[colsum(A)·‖q‖² + colsum(B)·‖k‖² − 2⟨A Q, B K⟩].
TEST(EspSoft, FactorisedCostEqualsDense) {
  const auto in = espInput(13, 13, 5, 19);
  EspParams p = espParams(0.5, SortMode::Soft);
  p.sortTemp = 0.05;
  const VecD D = espAttention(in, p).extras.at(EspExtras::costs).col(0);
  const VecD q2 = in.Q.rowwise().squaredNorm(), k2 = in.K.rowwise().squaredNorm();
  for (int l = 0; l < 5; ++l) {
    const MatD A = referenceSoftSort(in.Q.col(l), 0.05), B = referenceSoftSort(in.K.col(l), 0.05);
    const double factorised = (A.colwise().sum().dot(q2) + B.colwise().sum().dot(k2) -
                               2 * ((A * in.Q).array() * (B * in.K).array()).sum()) /
                              13.0;
    EXPECT_TRUE(near(D(l), factorised, 1e-10)) << "slice " << l;
  }
}

// t ≤ g²/50 is hard to 1e-6 (plan scale G = A/N); t = 1 is visibly soft.
TEST(EspSoft, ConvergesToHardBelowGapSquared) {
  const auto in = espInput(7, 7, 3, 23);
  const double g = test::minGapOverSlices(in.Q, in.K);
  ASSERT_GT(g, 1e-3);
  const auto hard = espAttention(in, espParams(1.0));
  EspParams p = espParams(1.0, SortMode::Soft);
  p.sortTemp = g * g / 50;
  const auto sharp = espAttention(in, p);
  EXPECT_LE((sharp.plan.dense() - hard.plan.dense()).cwiseAbs().maxCoeff() / 7, 1e-6);
  EXPECT_LE((sharp.extras.at(EspExtras::weights) - hard.extras.at(EspExtras::weights)).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_TRUE(near(sharp.extras.at(EspExtras::hardDistance)(0, 0), (sharp.plan.dense() - hard.plan.dense()).cwiseAbs().maxCoeff(), 0));
  p.sortTemp = 1;
  const auto blurred = espAttention(in, p);
  EXPECT_GT((blurred.plan.dense() - hard.plan.dense()).cwiseAbs().maxCoeff() / 7, 1e-3);
  EXPECT_TRUE(near(blurred.extras.at(EspExtras::hardDistance)(0, 0), (blurred.plan.dense() - hard.plan.dense()).cwiseAbs().maxCoeff(),
                   1e-15));
  EXPECT_EQ(hard.extras.count(EspExtras::hardDistance), 0u);
}

// With exact ties, split equals SoftSort at t ≤ g_min²/50 (g_min between distinct values).
TEST(EspSoft, TieSplitIsTheSoftLimit) {
  AttentionInput<double> in;
  in.Q = (MatD(6, 2) << 0.3, 1, 1.0, 0, 0.3, 1, 2.0, 2, 0.3, -1, 1.0, 0).finished();
  in.K = (MatD(6, 2) << 5.0, 0, -1.0, 0, 5.0, 3, 0.0, 1, 2.0, 1, 0.0, 2).finished();
  const double g = test::minGapOverSlices(in.Q, in.K);
  EspParams p = espParams(0.5, SortMode::Soft);
  p.sortTemp = g * g / 50;
  EXPECT_LE((espAttention(in, p).plan.dense() - espAttention(in, espParams(0.5)).plan.dense()).cwiseAbs().maxCoeff() / 6, 1e-6);
}

// Q = K (soft limit), token permutations and axis symmetries in soft mode.
TEST(EspSoft, IdentityPermutationAndSymmetries) {
  auto in = espInput(10, 10, 4, 29);
  EspParams p = espParams(0.5, SortMode::Soft);
  auto same = in;
  same.K = same.Q;
  p.sortTemp = std::pow(test::minGapOverSlices(same.Q, same.K), 2) / 50;
  EXPECT_TRUE(matricesNear(espAttention(same, p).plan.dense(), MatD::Identity(10, 10), 1e-5));

  p.sortTemp = 0.02;
  const auto base = espAttention(in, p);
  std::vector<int> perm = {3, 7, 1, 0, 9, 2, 8, 5, 4, 6};
  const MatD P = test::permutationMatrix(perm);
  auto both = in;
  both.Q = P * in.Q;
  both.K = P * in.K;
  EXPECT_TRUE(matricesNear(espAttention(both, p).plan.dense(), P * base.plan.dense() * P.transpose(), 1e-12));
  auto shifted = in;
  shifted.Q.array() += 0.75;
  shifted.K.array() += 0.75;
  EXPECT_TRUE(matricesNear(espAttention(shifted, p).plan.dense(), base.plan.dense(), 1e-10));
  auto flipped = in;
  flipped.Q.col(1) *= -1;
  flipped.K.col(1) *= -1;
  flipped.Q.col(0).swap(flipped.Q.col(3));
  flipped.K.col(0).swap(flipped.K.col(3));
  EXPECT_TRUE(matricesNear(espAttention(flipped, p).plan.dense(), base.plan.dense(), 1e-12));
}

TEST(EspSoft, FloatAgreesWithDouble) {
  const auto in = espInput(16, 16, 4, 31);
  EspParams p = espParams(0.5, SortMode::Soft);
  p.sortTemp = 0.1;
  const auto r64 = espAttention(in, p);
  const auto r32 = espAttention(in.cast<float>(), p);
  EXPECT_TRUE(matricesNear(r32.plan.dense().cast<double>(), r64.plan.dense(), 1e-5));
}

TEST(EspSoft, UnequalSizesKeepTotalMass) {
  for (auto coupling : {RankCoupling::NorthWestCorner, RankCoupling::Interpolation}) {
    EspParams p = espParams(0.5, SortMode::Soft);
    p.sortTemp = 0.1;
    p.rankCoupling = coupling;
    const auto r = espAttention(espInput(8, 13, 3, 37), p);
    EXPECT_TRUE(near(r.plan.dense().sum(), 8.0, 1e-12));
    EXPECT_EQ(r.plan.rows(), 8);
    EXPECT_EQ(r.plan.cols(), 13);
  }
}

}  // namespace
}  // namespace tl
