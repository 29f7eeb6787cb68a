// 1-D sliced Kantorovich potentials and the feature matrix Φ (docs/operators/asap.md#features,
// checked as listed in docs/operators/asap.md#checks).
#include "ops/asap/sliced_potentials.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;

VecD vec(std::initializer_list<double> values) {
  VecD v(Eigen::Index(values.size()));
  Eigen::Index i = 0;
  for (double x : values) v(i++) = x;
  return v;
}

VecD sortedCopy(const VecD& v) {
  VecD s = v;
  std::sort(s.data(), s.data() + s.size());
  return s;
}

// The hand-checked example, in order and shuffled.
TEST(SlicedPotentials, HandExample) {
  const auto p = potential1D(vec({0, 1, 3}), vec({-1, 0.5, 2}));
  EXPECT_TRUE(matricesNear(p.f, vec({0, 1.5, 4.5}), 1e-12));
  EXPECT_TRUE(matricesNear(p.g, vec({0.5, -1.375, -4.0}), 1e-12));
  EXPECT_TRUE(matricesNear(VecD(p.f.array() - p.f.mean()), vec({-2, -0.5, 2.5}), 1e-12));
  const auto shuffled = potential1D(vec({3, 0, 1}), vec({2, -1, 0.5}));
  EXPECT_TRUE(matricesNear(shuffled.f, vec({4.5, 0, 1.5}), 1e-12));
  EXPECT_TRUE(matricesNear(shuffled.g, vec({-4, 0.5, -1.375}), 1e-12));
}

// Feasibility everywhere, tightness on the sorted matching, strong duality.
TEST(SlicedPotentials, FeasibleTightAndStronglyDual) {
  for (int n : {1, 2, 3, 17, 64}) {
    SCOPED_TRACE(n);
    const VecD x = gaussian(n, 1, 3 * n).col(0), y = gaussian(n, 1, 3 * n + 1, 2.0).col(0);
    const auto p = potential1D(x, y);
    double minSlack = 1e300;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) minSlack = std::min(minSlack, 0.5 * (x(i) - y(j)) * (x(i) - y(j)) - p.f(i) - p.g(j));
    EXPECT_GE(minSlack, -1e-12);
    // Matched pairs (rank r with rank r) are tight, so the dual value equals the sorted primal cost.
    const VecD xs = sortedCopy(x), ys = sortedCopy(y);
    const double primal = 0.5 * (xs - ys).squaredNorm() / n;
    EXPECT_TRUE(near(p.f.mean() + p.g.mean(), primal, 1e-12));
    std::vector<int> ox(static_cast<size_t>(n)), oy(static_cast<size_t>(n));
    std::iota(ox.begin(), ox.end(), 0);
    std::iota(oy.begin(), oy.end(), 0);
    std::stable_sort(ox.begin(), ox.end(), [&](int a, int b) { return x(a) < x(b); });
    std::stable_sort(oy.begin(), oy.end(), [&](int a, int b) { return y(a) < y(b); });
    for (int r = 0; r < n; ++r) {
      const double gap = x(ox[size_t(r)]) - y(oy[size_t(r)]);
      EXPECT_TRUE(near(p.f(ox[size_t(r)]) + p.g(oy[size_t(r)]), 0.5 * gap * gap, 1e-12)) << "rank " << r;
    }
  }
}

// Ties: tied sources get identical potentials whatever the tie rule.
TEST(SlicedPotentials, TiedSourcesGetEqualPotentials) {
  const auto p = potential1D(vec({1, 0, 1, 2, 1}), vec({0.3, -2, 4, 1, 0}));
  EXPECT_EQ(p.f(0), p.f(2));
  EXPECT_EQ(p.f(0), p.f(4));
}

// The convex extension agrees with the potential at the knots and stays feasible off them.
TEST(SlicedPotentials, ConvexExtensionMatchesKnotsAndIsFeasible) {
  const VecD x = gaussian(9, 1, 5).col(0), y = gaussian(9, 1, 6).col(0);
  const auto p = potential1D(x, y);
  EXPECT_TRUE(matricesNear(potentialExtension(x, y, x), p.f, 1e-12));
  const VecD z = vec({-5, -0.3, 0.1, 0.77, 6});
  const VecD fz = potentialExtension(x, y, z);
  for (int k = 0; k < z.size(); ++k)
    for (int j = 0; j < y.size(); ++j) EXPECT_LE(fz(k) + p.g(j), 0.5 * (z(k) - y(j)) * (z(k) - y(j)) + 1e-12);
}

// Features are centred over active rows; n = 1 gives 0.
TEST(SlicedPotentials, FeaturesAreCentredAndZeroForOneToken) {
  const MatD Q = gaussian(20, 8, 1), K = gaussian(20, 8, 2), slices = gaussian(6, 8, 3);
  const MatD phi = slicedFeatures(Q, K, slices, std::nullopt);
  ASSERT_EQ(phi.rows(), 20);
  ASSERT_EQ(phi.cols(), 6);
  EXPECT_LE(phi.colwise().sum().cwiseAbs().maxCoeff(), 1e-12);
  Mask mask = Mask::Ones(20);
  for (int i : {3, 7, 19}) mask(i) = false;
  const MatD masked = slicedFeatures(Q, K, slices, mask);
  for (int l = 0; l < 6; ++l) {
    double activeSum = 0;
    for (int i = 0; i < 20; ++i)
      if (mask(i)) activeSum += masked(i, l);
    EXPECT_TRUE(near(activeSum, 0, 1e-12)) << "slice " << l;
  }
  EXPECT_TRUE(matricesNear(slicedFeatures(gaussian(1, 4, 1), gaussian(1, 4, 2), gaussian(3, 4, 3), std::nullopt),
                           MatD::Zero(1, 3), 0));
}

// Padded tokens do not enter the 1-D problem: active rows equal the features of the valid sub-block.
TEST(SlicedPotentials, PaddedTokensDoNotEnterTheActiveProblem) {
  const MatD Q = gaussian(12, 4, 8), K = gaussian(12, 4, 9), slices = gaussian(5, 4, 10);
  Mask mask = Mask::Ones(12);
  mask(2) = mask(10) = false;
  std::vector<int> valid;
  for (int i = 0; i < 12; ++i)
    if (mask(i)) valid.push_back(i);
  const MatD sub = slicedFeatures(test::selectRows(Q, valid), test::selectRows(K, valid), slices, std::nullopt);
  EXPECT_TRUE(matricesNear(test::selectRows(slicedFeatures(Q, K, slices, mask), valid), sub, 1e-12));
}

// Φ(ΠQ, ΠK) = ΠΦ(Q, K).
TEST(SlicedPotentials, PermutationEquivariant) {
  const MatD Q = gaussian(15, 6, 11), K = gaussian(15, 6, 12), slices = gaussian(7, 6, 13);
  std::vector<int> perm(15);
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());
  std::swap(perm[0], perm[5]);
  const MatD phi = slicedFeatures(Q, K, slices, std::nullopt);
  const MatD permuted = slicedFeatures(test::permuteRows(Q, perm), test::permuteRows(K, perm), slices, std::nullopt);
  EXPECT_TRUE(matricesNear(permuted, test::permuteRows(phi, perm), 1e-12));
}

}  // namespace
}  // namespace tl
