// ESP attention, hard sorting: the checks of docs/operators/esp.md#checks and its hand-computed 4-token
// example (float64 tolerance 1e-12 unless the example is printed to fewer digits). Assertions on matchings
// use the integer matchings π_l, not floating-point plan entries; ascending and descending agree only without
// ties. Reference values come from esp_test_util.h.
#include "ops/esp/esp.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/parallel.h"
#include "support/esp_test_util.h"

namespace tl {
namespace {

using test::espInput;
using test::espParams;
using test::gaussian;
using test::matchingRow;
using test::matricesNear;
using test::near;

VecD rowSums(const MatD& A) { return A.rowwise().sum(); }
VecD colSums(const MatD& A) { return A.colwise().sum().transpose(); }
VecD extraVec(const PlanResult<double>& r, const char* name) { return r.extras.at(name).col(0); }

// The hand-computed 4-token, 2-axis example (docs/operators/esp.md#checks).
AttentionInput<double> goldenInput() {
  AttentionInput<double> in;
  in.Q = (MatD(4, 2) << 0, 3, 1, 0, 2, 2, 3, 1).finished();
  in.K = (MatD(4, 2) << 0.5, 1, 2.5, 0, 1.5, 3, 3.5, 2).finished();
  in.V = (MatD(4, 2) << 1, 0, 0, 1, 1, 1, 2, -1).finished();
  return in;
}

TEST(EspGolden, MatchingsAndCosts) {
  const auto r = espAttention(goldenInput(), espParams(0));
  EXPECT_EQ(matchingRow(r.extras.at(EspExtras::matchings), 0), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(matchingRow(r.extras.at(EspExtras::matchings), 1), (std::vector<int>{2, 1, 3, 0}));
  EXPECT_TRUE(matricesNear(extraVec(r, EspExtras::costs), VecD((VecD(2) << 4.75, 3.25).finished()), 1e-12));
}

// The axis slicer's directions are the coordinate axes (L = d), reported so views can draw them.
TEST(EspGolden, ReportsSliceDirections) {
  const auto r = espAttention(goldenInput(), espParams(0));
  EXPECT_TRUE(matricesNear(r.extras.at(EspExtras::directions), MatD::Identity(2, 2), 0.0));
}

TEST(EspGolden, TauZero) {
  const auto r = espAttention(goldenInput(), espParams(0));
  EXPECT_TRUE(matricesNear(extraVec(r, EspExtras::weights), VecD::Constant(2, 0.5), 0.0));
  const MatD attn = (MatD(4, 4) << .5, 0, .5, 0, 0, .5, .5, 0, 0, .5, 0, .5, .5, 0, 0, .5).finished();
  const MatD out = (MatD(4, 2) << 1, .5, .5, 1, 1, 0, 1.5, -.5).finished();
  EXPECT_TRUE(matricesNear(r.plan.dense(), attn, 1e-12));
  ASSERT_TRUE(r.output);
  EXPECT_TRUE(matricesNear(*r.output, out, 1e-12));
}

TEST(EspGolden, TauOne) {
  const auto r = espAttention(goldenInput(), espParams(1));
  const double w0 = 1 / (1 + std::exp(1.5)), w1 = std::exp(1.5) / (1 + std::exp(1.5));
  EXPECT_TRUE(near(w0, 0.1824255238, 1e-10));
  EXPECT_TRUE(matricesNear(extraVec(r, EspExtras::weights), VecD((VecD(2) << w0, w1).finished()), 1e-12));
  const MatD attn = (MatD(4, 4) << w0, 0, w1, 0, 0, w1, w0, 0, 0, w0, 0, w1, w1, 0, 0, w0).finished();
  EXPECT_TRUE(matricesNear(r.plan.dense(), attn, 1e-12));
  const MatD out = (MatD(4, 2) << 1, 0.8175744762, 0.1824255238, 1, 1.6351489524, -0.6351489524, 1.1824255238,
                    -0.1824255238)
                       .finished();
  EXPECT_TRUE(matricesNear(*r.output, out, 1e-10));  // printed to 10 digits
}

TEST(EspGolden, CostExponentOne) {
  EspParams p = espParams(1);
  p.p = 1;
  const auto r = espAttention(goldenInput(), p);
  EXPECT_TRUE(matricesNear(extraVec(r, EspExtras::costs), VecD((VecD(2) << 2.0706302199, 1.75).finished()), 1e-10));
  EXPECT_TRUE(
      matricesNear(extraVec(r, EspExtras::weights), VecD((VecD(2) << 0.4205221661, 0.5794778339).finished()), 1e-10));
}

// docs/operators/esp.md#compat: compat=reference-code is p = 1 on q, k scaled by d^{-1/2}.
TEST(EspCompat, ReferenceCodeIsCostOneOnPrescaledInputs) {
  const auto in = espInput(9, 9, 4, 3);
  EspParams code = espParams(2);
  code.compat = EspCompat::ReferenceCode;
  EspParams manual = espParams(2);
  manual.p = 1;
  auto scaled = in;
  scaled.Q /= 2.0;
  scaled.K /= 2.0;
  const auto a = espAttention(in, code), b = espAttention(scaled, manual);
  EXPECT_TRUE(matricesNear(a.plan.dense(), b.plan.dense(), 1e-12));
  EXPECT_TRUE(matricesNear(a.extras.at(EspExtras::costs), b.extras.at(EspExtras::costs), 1e-12));
}

// Exactly doubly stochastic; every π_l a bijection equal to the sorted matching; ≤ L per row.
TEST(EspHard, DoublyStochasticWithPermutationSlices) {
  for (int n : {1, 2, 7, 64, 197})
    for (int d : {1, 2, 8, 64}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " d=" << d);
      const auto in = espInput(n, n, d, 7 * n + d);
      const auto r = espAttention(in, espParams(0.1));
      EXPECT_TRUE(matricesNear(rowSums(r.plan.dense()), VecD::Ones(n), 1e-12));
      EXPECT_TRUE(matricesNear(colSums(r.plan.dense()), VecD::Ones(n), 1e-12));
      EXPECT_GE(r.plan.dense().minCoeff(), 0.0);
      EXPECT_LT(r.errors.rowMax, 1e-12);
      EXPECT_LT(r.errors.colMax, 1e-12);
      ASSERT_EQ(r.errorHistory.size(), 1u);
      const MatD& m = r.extras.at(EspExtras::matchings);
      ASSERT_EQ(m.rows(), d);
      ASSERT_EQ(m.cols(), n);
      for (int l = 0; l < d; ++l) {
        const auto pi = matchingRow(m, l);
        EXPECT_EQ(pi, test::referenceMatching(in.Q.col(l), in.K.col(l))) << "slice " << l;
        std::vector<int> sorted = pi;
        std::sort(sorted.begin(), sorted.end());
        for (int i = 0; i < n; ++i) EXPECT_EQ(sorted[i], i) << "π_" << l << " is not a bijection";
      }
      for (int i = 0; i < n; ++i) EXPECT_LE((r.plan.dense().row(i).array() > 0).count(), d);
      const auto r32 = espAttention(in.cast<float>(), espParams(0.1));
      EXPECT_TRUE(matricesNear(rowSums(r32.plan.dense().cast<double>()), VecD::Ones(n), 1e-6));
      EXPECT_TRUE(matricesNear(colSums(r32.plan.dense().cast<double>()), VecD::Ones(n), 1e-6));
      // Same plan when float rounding creates no ties (at n = 197, d = 64 it does: split then differs);
      // D_l ≈ 2d carries float error ~1e-5·D, which moves w by tau·ΔD, hence 1e-4.
      if (r32.extras.at(EspExtras::ties).sum() == 0) {
        EXPECT_TRUE(matricesNear(r32.plan.dense().cast<double>(), r.plan.dense(), 1e-4));
      }
    }
}

// The whole hard path against the dense formulas of docs/operators/esp.md#definition written out in the test.
TEST(EspHard, EqualsDenseReference) {
  for (double tau : {0.0, 0.1, 1.0, 10.0})
    for (double p : {1.0, 2.0, 3.0}) {
      SCOPED_TRACE(::testing::Message() << "tau=" << tau << " p=" << p);
      const auto in = espInput(23, 23, 6, 5);
      EspParams params = espParams(tau);
      params.p = p;
      const auto r = espAttention(in, params);
      const auto ref = test::referenceHardEsp(in.Q, in.K, MatD::Identity(6, 6), tau, p);
      EXPECT_TRUE(matricesNear(r.plan.dense(), ref.plan, 1e-12));
      EXPECT_TRUE(matricesNear(extraVec(r, EspExtras::costs), ref.costs, 1e-12));
      EXPECT_TRUE(matricesNear(extraVec(r, EspExtras::weights), ref.weights, 1e-12));
      EXPECT_TRUE(matricesNear(*r.output, ref.plan * *in.V, 1e-12));
    }
}

// Weights on the simplex; tau = 0 uniform exactly; large tau one-hot on the unique argmin; shift-free.
TEST(EspHard, SliceWeights) {
  const VecD D = (VecD(4) << 3.0, 1.0, 2.5, 7.0).finished();
  EXPECT_TRUE(matricesNear(sliceWeights(D, 0.0), VecD::Constant(4, 0.25), 0.0));
  const VecD w = sliceWeights(D, 0.7);
  EXPECT_GE(w.minCoeff(), 0.0);
  EXPECT_TRUE(near(w.sum(), 1.0, 1e-12));
  EXPECT_TRUE(matricesNear(sliceWeights<double>(D.array() + 1234.5, 0.7), w, 1e-12));
  EXPECT_TRUE(matricesNear(sliceWeights(D, 1e6), VecD((VecD(4) << 0, 1, 0, 0).finished()), 0.0));
  // Huge costs stay finite (the minimum is subtracted first).
  EXPECT_TRUE(matricesNear(sliceWeights<double>(D.array() * 1e300, 1e-300), sliceWeights(D, 1.0), 1e-12));
}

TEST(EspHard, LargeTauKeepsTheCheapestSlice) {
  const auto in = espInput(31, 31, 8, 9);
  const auto r = espAttention(in, espParams(1e6));
  const VecD D = extraVec(r, EspExtras::costs);
  Eigen::Index best;
  D.minCoeff(&best);
  const auto pi = matchingRow(r.extras.at(EspExtras::matchings), int(best));
  EXPECT_TRUE(matricesNear(r.plan.dense(), test::permutationMatrix(pi), 0.0)) << "G must equal U_argmin";
  for (int i = 0; i < 31; ++i) EXPECT_EQ((r.plan.dense().row(i).array() > 0).count(), 1);  // one-hot at tau → ∞
}

// Exact W_p^p of two uniform measures of equal size by enumerating permutations (n ≤ 7).
double exactTransportCost(const MatD& Q, const MatD& K, double p, std::vector<int>* best = nullptr) {
  std::vector<int> perm(Q.rows());
  std::iota(perm.begin(), perm.end(), 0);
  double lowest = test::kInf;
  do {
    double c = 0;
    for (size_t i = 0; i < perm.size(); ++i) c += std::pow((Q.row(Eigen::Index(i)) - K.row(perm[i])).norm(), p);
    if (c < lowest) {
      lowest = c;
      if (best) *best = perm;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return lowest / double(Q.rows());
}

// Every D_l ≥ W_p^p; ⟨C, G⟩ = Σ w_l D_l between min and max D_l and non-increasing in tau.
TEST(EspHard, CostBounds) {
  const auto in = espInput(7, 7, 3, 21);
  const double exact = exactTransportCost(in.Q, in.K, 2);
  double previous = test::kInf;
  for (double tau : {0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1e6}) {
    const auto r = espAttention(in, espParams(tau));
    const VecD D = extraVec(r, EspExtras::costs), w = extraVec(r, EspExtras::weights);
    EXPECT_GE(D.minCoeff(), exact - 1e-12);
    double planCost = 0;
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 7; ++j) planCost += r.plan(i, j) / 7.0 * (in.Q.row(i) - in.K.row(j)).squaredNorm();
    EXPECT_TRUE(near(planCost, w.dot(D), 1e-12));
    EXPECT_GE(planCost, D.minCoeff() - 1e-12);
    EXPECT_LE(planCost, D.maxCoeff() + 1e-12);
    EXPECT_LE(planCost, previous + 1e-12) << "tau=" << tau;
    previous = planCost;
  }
}

// With d = 1 ESP is the exact OT plan.
TEST(EspHard, OneDimensionIsExactTransport) {
  for (double p : {1.0, 2.0}) {
    const auto in = espInput(7, 7, 1, 33);
    EspParams params = espParams(0.3);
    params.p = p;
    std::vector<int> best;
    const double exact = exactTransportCost(in.Q, in.K, p, &best);
    const auto r = espAttention(in, params);
    EXPECT_TRUE(near(r.extras.at(EspExtras::costs)(0, 0), exact, 1e-12));
    if (p == 2) {
      EXPECT_TRUE(matricesNear(r.plan.dense(), test::permutationMatrix(best), 0.0));
    }
  }
}

// Q = K without ties gives the identity and Out = V for every tau.
TEST(EspHard, IdenticalQueriesAndKeysGiveIdentity) {
  auto in = espInput(12, 12, 5, 41);
  in.K = in.Q;
  for (double tau : {0.0, 1.0, 100.0}) {
    const auto r = espAttention(in, espParams(tau));
    EXPECT_TRUE(matricesNear(r.plan.dense(), MatD::Identity(12, 12), 1e-15));
    EXPECT_TRUE(matricesNear(*r.output, *in.V, 1e-14));
  }
}

// G(ΠQ, ΠK) = Π G Πᵀ with w unchanged; G(ΠQ, K) = Π G; G(Q, ΠK) = G Πᵀ.
TEST(EspHard, TokenPermutationEquivariance) {
  const auto in = espInput(17, 17, 6, 51);
  std::vector<int> perm(17);
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());
  std::swap(perm[2], perm[9]);
  const MatD P = test::permutationMatrix(perm);
  const auto base = espAttention(in, espParams(0.5));
  auto both = in, queries = in, keys = in;
  both.Q = P * in.Q;
  both.K = P * in.K;
  both.V = P * *in.V;
  queries.Q = P * in.Q;
  keys.K = P * in.K;
  keys.V = P * *in.V;
  const auto rb = espAttention(both, espParams(0.5));
  EXPECT_TRUE(matricesNear(rb.plan.dense(), P * base.plan.dense() * P.transpose(), 1e-12));
  EXPECT_TRUE(matricesNear(rb.extras.at(EspExtras::weights), base.extras.at(EspExtras::weights), 1e-12));
  EXPECT_TRUE(matricesNear(*rb.output, P * *base.output, 1e-12));  // layer level: Out(ΠX) = Π Out(X)
  EXPECT_TRUE(matricesNear(espAttention(queries, espParams(0.5)).plan.dense(), P * base.plan.dense(), 1e-12));
  EXPECT_TRUE(matricesNear(espAttention(keys, espParams(0.5)).plan.dense(), base.plan.dense() * P.transpose(), 1e-12));
}

// Translation, axis permutations with sign flips (the ascending/descending symmetry), positive scaling.
TEST(EspHard, Symmetries) {
  const auto in = espInput(19, 19, 5, 61);
  const auto base = espAttention(in, espParams(0.5));
  auto shifted = in;
  const Eigen::RowVectorXd c = (Eigen::RowVectorXd(5) << 0.5, -1.25, 2, 0.75, -3).finished();
  shifted.Q.rowwise() += c;
  shifted.K.rowwise() += c;
  EXPECT_TRUE(matricesNear(espAttention(shifted, espParams(0.5)).plan.dense(), base.plan.dense(), 1e-12));

  MatD axes = MatD::Zero(5, 5);  // column j of Q·axes is ±column σ(j) of Q
  const int sigma[] = {3, 0, 4, 1, 2};
  const double sign[] = {-1, 1, -1, -1, 1};
  for (int j = 0; j < 5; ++j) axes(sigma[j], j) = sign[j];
  auto flipped = in;
  flipped.Q = in.Q * axes;
  flipped.K = in.K * axes;
  EXPECT_TRUE(matricesNear(espAttention(flipped, espParams(0.5)).plan.dense(), base.plan.dense(), 1e-12));

  auto scaled = in;
  scaled.Q *= 3.5;
  scaled.K *= 3.5;
  const auto rs = espAttention(scaled, espParams(0.5));
  EXPECT_TRUE(matricesNear(rs.extras.at(EspExtras::matchings), base.extras.at(EspExtras::matchings), 0.0));
  EXPECT_TRUE(matricesNear(espAttention(scaled, espParams(0)).plan.dense(), espAttention(in, espParams(0)).plan.dense(), 1e-12));
}

// Column-stochasticity preserves the token mean of V.
TEST(EspHard, MeanPreservation) {
  const auto in = espInput(40, 40, 8, 71, 6);
  const auto r = espAttention(in, espParams(0.2));
  EXPECT_TRUE(matricesNear(r.output->colwise().mean(), in.V->colwise().mean(), 1e-12));
  const auto r32 = espAttention(in.cast<float>(), espParams(0.2));
  EXPECT_TRUE(matricesNear(r32.output->colwise().mean().cast<double>(), in.V->colwise().mean(), 1e-5));
}

// split = the lifted plan on exact ties (docs/operators/esp.md#ties), break = a permutation; both doubly
// stochastic; ties flagged.
TEST(EspTies, SplitIsEquationFiveAndBreakIsAPermutation) {
  AttentionInput<double> in;
  in.Q = (MatD(6, 1) << 0.3, 1.0, 0.3, 2.0, 0.3, 1.0).finished();
  in.K = (MatD(6, 1) << 5.0, -1.0, 5.0, 0.0, 2.0, 0.0).finished();
  in.V = gaussian(6, 2, 81);
  const auto split = espAttention(in, espParams(0.1));
  EXPECT_TRUE(matricesNear(split.plan.dense(), 6.0 * test::referenceSplitSlicePlan(in.Q.col(0), in.K.col(0)), 1e-12));
  EXPECT_EQ(split.extras.at(EspExtras::ties)(0, 0), 9.0);  // 3 + 2 tied queries, 2 + 2 tied keys
  EXPECT_TRUE(matricesNear(rowSums(split.plan.dense()), VecD::Ones(6), 1e-12));
  EXPECT_TRUE(matricesNear(colSums(split.plan.dense()), VecD::Ones(6), 1e-12));

  const auto broken = espAttention(in, espParams(0.1, SortMode::Hard, TiePolicy::Break));
  const auto pi = matchingRow(broken.extras.at(EspExtras::matchings), 0);
  EXPECT_EQ(pi, test::referenceMatching(in.Q.col(0), in.K.col(0)));
  EXPECT_TRUE(matricesNear(broken.plan.dense(), test::permutationMatrix(pi), 0.0));
  // Under split the matchings extra holds the same break-rule matching.
  EXPECT_EQ(matchingRow(split.extras.at(EspExtras::matchings), 0), pi);
}

TEST(EspTies, DuplicateTokensInManyDimensions) {
  auto in = espInput(12, 12, 4, 91);
  in.Q.row(5) = in.Q.row(2);
  in.Q.row(9) = in.Q.row(2);
  in.K.row(7) = in.K.row(0);
  for (auto ties : {TiePolicy::Split, TiePolicy::Break}) {
    const auto r = espAttention(in, espParams(0.3, SortMode::Hard, ties));
    EXPECT_TRUE(matricesNear(rowSums(r.plan.dense()), VecD::Ones(12), 1e-12));
    EXPECT_TRUE(matricesNear(colSums(r.plan.dense()), VecD::Ones(12), 1e-12));
    EXPECT_GT(r.extras.at(EspExtras::ties).minCoeff(), 0.0);
    if (ties == TiePolicy::Split) {  // duplicated queries get identical rows
      EXPECT_TRUE(matricesNear(r.plan.dense().row(5), r.plan.dense().row(2), 1e-15));
      EXPECT_TRUE(matricesNear(r.plan.dense().col(7), r.plan.dense().col(0), 1e-15));
    }
  }
}

// The gather path equals the dense (N·G)·V, including ties, masks and n_q ≠ n_k.
TEST(EspLazy, EqualsDenseOutput) {
  struct Case {
    int nq, nk, d;
    bool ties, mask;
    RankCoupling coupling;
  };
  const Case cases[] = {{1, 1, 3, false, false, RankCoupling::NorthWestCorner},
                        {2, 2, 2, false, false, RankCoupling::NorthWestCorner},
                        {37, 37, 8, false, false, RankCoupling::NorthWestCorner},
                        {200, 200, 16, false, false, RankCoupling::NorthWestCorner},
                        {37, 37, 8, true, false, RankCoupling::NorthWestCorner},
                        {29, 29, 4, true, true, RankCoupling::NorthWestCorner},
                        {13, 29, 5, false, false, RankCoupling::NorthWestCorner},
                        {29, 13, 5, true, false, RankCoupling::NorthWestCorner},
                        {13, 29, 5, true, false, RankCoupling::Interpolation},
                        {7, 4, 3, false, false, RankCoupling::Interpolation}};
  for (const auto& c : cases)
    for (auto ties : {TiePolicy::Split, TiePolicy::Break}) {
      SCOPED_TRACE(::testing::Message() << c.nq << "x" << c.nk << " d=" << c.d << " ties=" << c.ties
                                        << " mask=" << c.mask << " split=" << (ties == TiePolicy::Split));
      auto in = espInput(c.nq, c.nk, c.d, 100 + c.nq + c.nk, 4);
      if (c.ties) {
        in.Q = (in.Q * 2).array().round() / 2;  // values on a 0.5 grid: many exact ties
        in.K = (in.K * 2).array().round() / 2;
      }
      if (c.mask) in.mask = test::makeMask({true, false, true, true, false, true, true, true, false, true, true, true,
                                            true, false, true, true, true, true, true, false, true, true, true, true,
                                            true, true, false, true, true});
      EspParams p = espParams(0.7, SortMode::Hard, ties);
      p.rankCoupling = c.coupling;
      const auto dense = espAttention(in, p);
      EXPECT_TRUE(matricesNear(espLazyOutput(in, p), *dense.output, 1e-12));
      const auto dense32 = espAttention(in.cast<float>(), p);
      EXPECT_TRUE(matricesNear(espLazyOutput(in.cast<float>(), p).cast<double>(), dense32.output->cast<double>(), 1e-5));
    }
}

// The lazy path never forms n×n: it runs where the dense plan is refused, and gives Out[i] = Σ_l w_l V[π_l(i)].
TEST(EspLazy, RunsWhereTheDensePlanIsRefused) {
  const int n = 20000, d = 3;
  const auto in = espInput(n, n, d, 141, 2);
  const auto r = espAttention(in, espParams(0.5));  // the plan stays sliced: 2·n·L numbers, not n²
  EXPECT_THROW((void)r.plan.dense(), ResourceError) << "20000² doubles exceed the dense-plan cap";
  const MatD out = *r.output;
  std::vector<std::vector<int>> pi;
  VecD costs(d);
  for (int l = 0; l < d; ++l) {
    pi.push_back(test::referenceMatching(in.Q.col(l), in.K.col(l)));
    costs(l) = 0;
    for (int i = 0; i < n; ++i) costs(l) += (in.Q.row(i) - in.K.row(pi[l][i])).squaredNorm() / n;
  }
  VecD w = (-0.5 * (costs.array() - costs.minCoeff())).exp().matrix();
  w /= w.sum();
  MatD expected = MatD::Zero(n, 2);
  for (int l = 0; l < d; ++l)
    for (int i = 0; i < n; ++i) expected.row(i) += w(l) * in.V->row(pi[l][i]);
  EXPECT_TRUE(matricesNear(out, expected, 1e-12));
  EXPECT_TRUE(matricesNear(out.colwise().mean(), in.V->colwise().mean(), 1e-12));  // the token mean of V
}

TEST(EspLazy, RefusesSoftSortAndMissingValues) {
  auto in = espInput(5, 5, 2, 3);
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { (void)espLazyOutput(in, espParams(0.1, SortMode::Soft)); },
                                                {"sort=hard"}));
  in.V.reset();
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { (void)espLazyOutput(in, espParams(0.1)); }, {"V"}));
}

// A padded sequence behaves exactly like its valid sub-sequence; padded rows and columns are 0.
TEST(EspMask, EqualsValidSubsequence) {
  const std::vector<bool> valid = {true, false, true, true, false, true, true, false, true};
  const std::vector<int> idx = {0, 2, 3, 5, 6, 8};
  auto in = espInput(9, 9, 4, 111);
  in.mask = test::makeMask(valid);
  AttentionInput<double> sub;
  sub.Q = test::selectRows(in.Q, idx);
  sub.K = test::selectRows(in.K, idx);
  sub.V = test::selectRows(*in.V, idx);
  const auto r = espAttention(in, espParams(0.4));
  const auto s = espAttention(sub, espParams(0.4));
  for (size_t a = 0; a < idx.size(); ++a) {
    for (size_t b = 0; b < idx.size(); ++b) EXPECT_EQ(r.plan(idx[a], idx[b]), s.plan(Eigen::Index(a), Eigen::Index(b)));
    EXPECT_TRUE(matricesNear(r.output->row(idx[a]), s.output->row(Eigen::Index(a)), 1e-15));
  }
  for (int i = 0; i < 9; ++i) {
    if (valid[i]) continue;
    EXPECT_EQ(r.plan.dense().row(i).cwiseAbs().sum(), 0.0);
    EXPECT_EQ(r.plan.dense().col(i).cwiseAbs().sum(), 0.0);
    EXPECT_EQ(r.output->row(i).cwiseAbs().sum(), 0.0);
  }
  EXPECT_LT(r.errors.rowMax, 1e-12);  // padded rows have target 0 (docs/conventions.md#marginal-errors)
  EXPECT_LT(r.errors.colMax, 1e-12);
  // Matchings name tokens of the full sequence; padded queries have none (-1).
  const MatD& m = r.extras.at(EspExtras::matchings), &ms = s.extras.at(EspExtras::matchings);
  ASSERT_EQ(m.cols(), 9);
  for (int l = 0; l < 4; ++l)
    for (int i = 0; i < 9; ++i) {
      const auto it = std::find(idx.begin(), idx.end(), i);
      const double expected = it == idx.end() ? -1.0 : idx[int(ms(l, it - idx.begin()))];
      EXPECT_EQ(m(l, i), expected);
    }
}

// n_q ≠ n_k (docs/operators/esp.md#unequal-sizes). NW corner: rows 1 and columns n_q/n_k exactly; paper
// interpolation: rows 1, columns off (reported honestly), identity coupling when n_q = n_k.
TEST(EspUnequal, NorthWestCornerMarginalsAreExact) {
  for (auto [nq, nk] : {std::pair{13, 29}, std::pair{29, 13}, std::pair{7, 4}, std::pair{1, 5}, std::pair{5, 1}}) {
    SCOPED_TRACE(::testing::Message() << nq << "x" << nk);
    const auto in = espInput(nq, nk, 6, 121 + nq);
    const auto r = espAttention(in, espParams(0.3));
    EXPECT_TRUE(matricesNear(rowSums(r.plan.dense()), VecD::Ones(nq), 1e-12));
    EXPECT_TRUE(matricesNear(colSums(r.plan.dense()), VecD::Constant(nk, double(nq) / nk), 1e-12));
    EXPECT_TRUE(matricesNear(r.colTarget, VecD::Constant(nk, double(nq) / nk), 0.0));
    EXPECT_LT(r.errors.colMax, 1e-12);
    EXPECT_FALSE(r.massMismatch);
    EXPECT_EQ(r.extras.at(EspExtras::matchings).cols(), nq);
  }
}

TEST(EspUnequal, PaperInterpolationColumnsAreApproximate) {
  const auto in = espInput(7, 4, 1, 131);  // one slice: column sums are the hat matrix's, in key-rank order
  EspParams p = espParams(0.3);
  p.rankCoupling = RankCoupling::Interpolation;
  const auto r = espAttention(in, p);
  EXPECT_TRUE(matricesNear(rowSums(r.plan.dense()), VecD::Ones(7), 1e-12));
  const auto keyOrder = test::argsortAscending(in.K.col(0));
  const double expected[] = {1.5, 2.0, 2.0, 1.5};  // 7·(0.214, 0.286, 0.286, 0.214), (docs/operators/esp.md)
  for (int s = 0; s < 4; ++s) EXPECT_TRUE(near(colSums(r.plan.dense())(keyOrder[s]), expected[s], 1e-12));
  EXPECT_TRUE(near(r.errors.colMax, 0.25, 1e-12));  // target 7/4
  // n_q = n_k: the interpolation is the identity coupling.
  const auto square = espInput(9, 9, 3, 132);
  EXPECT_TRUE(matricesNear(espAttention(square, p).plan.dense(), espAttention(square, espParams(0.3)).plan.dense(), 0.0));
}

TEST(EspFeedback, CancelStopsTheRun) {
  Feedback feedback;
  feedback.cancel();
  EXPECT_THROW((void)espAttention(espInput(8, 8, 4, 1), espParams(0.1), feedback), Canceled);
}

// The slices (sort, tie groups, cost) run split across threads when there is enough work: each slice is computed
// the same way on any thread, so 1 and 2 threads give identical matchings, costs, weights and plans.
TEST(EspThreads, SameResultOnOneAndTwoThreads) {
  const int threadsBefore = parallelThreads();
  const auto input = espInput(400, 300, 8, 7);
  EspParams params = espParams(0.5);
  params.slices.slicer = Slicer::Random;
  params.slices.L = 16;
  setParallelThreads(1);
  const auto one = espAttention(input, params);
  setParallelThreads(2);
  const auto two = espAttention(input, params);
  setParallelThreads(threadsBefore);
  for (const char* extra : {EspExtras::matchings, EspExtras::costs, EspExtras::weights})
    EXPECT_TRUE(matricesNear(two.extras.at(extra), one.extras.at(extra), 0.0)) << extra;
  EXPECT_TRUE(matricesNear(two.plan.dense(), one.plan.dense(), 0.0));
  EXPECT_TRUE(matricesNear(*two.output, *one.output, 0.0));
}

}  // namespace
}  // namespace tl
