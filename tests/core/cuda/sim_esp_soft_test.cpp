// Soft ESP's device path (ops/esp/esp_soft_device.h) run on the simulated device (sim_device.h) against the CPU
// reference espAttention with sort=soft, with the equivalence suite's tolerance (equivalence_suite.h): each
// field's error against the CPU float64 run at most kRatio times the CPU float32 run's own error on the same
// case, plus a floor of a few float32 ulps. Plus the band planning (cuda/esp_soft_bands.h) against a brute
// force: no tile that holds a nonzero entry of U_l, and no entry of Λ that reaches it, is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "cuda/esp_soft_bands.h"
#include "equivalence_suite.h"
#include "ops/esp/esp.h"
#include "ops/esp/esp_soft_device.h"
#include "ops/esp/rank_coupling.h"
#include "ops/esp/soft_sort.h"
#include "sim_kernels.h"
#include "support/test_util.h"

namespace tl {
namespace {

using equivalence::compareField;
using equivalence::errorsMatrix;
using equivalence::withinTolerance;

EspParams softParams(double sortTemp, double tau, double p) {
  EspParams e;
  e.sort = SortMode::Soft;
  e.sortTemp = sortTemp;
  e.tau = tau;
  e.p = p;
  return e;
}

AttentionInput<double> gaussianInput(int nq, int nk, int d, bool padded, uint64_t seed) {
  return equivalence::inputFor({"esp", nq, nk, d, padded}, seed);
}

void expectMatchesCpu(const AttentionInput<double>& in, const EspParams& p) {
  const PlanResult<double> f64 = espAttention(in, p);
  const PlanResult<float> f32 = espAttention(in.cast<float>(), p);
  const PlanResult<float> dev = espSoftOnDevice(in.cast<float>(), p, cuda::test::simulatedKernels());
  EXPECT_EQ(dev.backend, Backend::Cuda);
  EXPECT_TRUE(dev.plan.isDense());
  ASSERT_EQ(dev.plan.rows(), f64.plan.rows());
  ASSERT_EQ(dev.plan.cols(), f64.plan.cols());
  const std::string family = "esp soft";
  EXPECT_TRUE(withinTolerance(family, "plan", compareField(dev.plan.dense(), f32.plan.dense(), f64.plan.dense())));
  EXPECT_TRUE(withinTolerance(family, "output", compareField(*dev.output, *f32.output, *f64.output)));
  EXPECT_TRUE(withinTolerance(family, "errors", compareField(errorsMatrix(dev.errorHistory),
                                                             errorsMatrix(f32.errorHistory),
                                                             errorsMatrix(f64.errorHistory), 1.0)));
  EXPECT_TRUE(withinTolerance(family, "targets", compareField(dev.colTarget, f32.colTarget, f64.colTarget)));
  EXPECT_TRUE(withinTolerance(family, "row targets", compareField(dev.rowTarget, f32.rowTarget, f64.rowTarget)));
  ASSERT_EQ(dev.extras.size(), f64.extras.size());
  for (const auto& [name, reference] : f64.extras) {
    ASSERT_TRUE(dev.extras.count(name)) << name;
    ASSERT_EQ(dev.extras.at(name).rows(), reference.rows()) << name;
    ASSERT_EQ(dev.extras.at(name).cols(), reference.cols()) << name;
    EXPECT_TRUE(withinTolerance(family, name, compareField(dev.extras.at(name), f32.extras.at(name), reference)));
  }
  // Integers: exactly the CPU float32 run's.
  EXPECT_TRUE(test::matricesIdentical(dev.extras.at(EspExtras::matchings), f32.extras.at(EspExtras::matchings)));
  EXPECT_TRUE(test::matricesIdentical(dev.extras.at(EspExtras::ties), f32.extras.at(EspExtras::ties)));
}

TEST(SimEspSoft, OddSquareSizesMatchTheCpuReference) {
  for (int n : {1, 2, 7, 33}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    expectMatchesCpu(gaussianInput(n, n, 5, false, 10 + uint64_t(n)), softParams(0.1, 1, 2));
  }
}

// From nearly hard (narrow bands: most tiles skipped) to dense rows (every tile visited), each tau.
TEST(SimEspSoft, EverySortTemperatureAndTauMatchesTheCpuReference) {
  const AttentionInput<double> in = gaussianInput(70, 70, 4, false, 3);
  for (double t : {1e-4, 1e-2, 1.0, 100.0})
    for (double tau : {0.0, 0.1, 10.0}) {
      SCOPED_TRACE("sort_temp = " + std::to_string(t) + ", tau = " + std::to_string(tau));
      expectMatchesCpu(in, softParams(t, tau, 2));
    }
}

TEST(SimEspSoft, PlainDistanceAndReferenceCodeCompatMatchTheCpuReference) {
  const AttentionInput<double> in = gaussianInput(40, 40, 6, false, 4);
  expectMatchesCpu(in, softParams(0.05, 1, 1));
  EspParams compat = softParams(0.05, 1, 2);
  compat.compat = EspCompat::ReferenceCode;
  expectMatchesCpu(in, compat);
}

TEST(SimEspSoft, RectanglesMatchTheCpuReferenceWithBothRankCouplings) {
  for (RankCoupling coupling : {RankCoupling::NorthWestCorner, RankCoupling::Interpolation})
    for (auto [nq, nk] : {std::pair{7, 33}, {33, 7}, {50, 19}}) {
      SCOPED_TRACE(std::to_string(nq) + "x" + std::to_string(nk));
      EspParams p = softParams(0.01, 0.5, 2);
      p.rankCoupling = coupling;
      expectMatchesCpu(gaussianInput(nq, nk, 3, false, 5 + uint64_t(nq)), p);
    }
}

TEST(SimEspSoft, PaddedTokensAreLeftOutLikeOnTheCpu) {
  for (double t : {1e-3, 1.0}) expectMatchesCpu(gaussianInput(37, 37, 4, true, 6), softParams(t, 0.1, 2));
}

// Duplicated tokens tie on every slice: the SoftSort rows of tied anchors are equal, whichever token sits
// where in the sorted order.
TEST(SimEspSoft, TiedTokensMatchTheCpuReference) {
  AttentionInput<double> in = gaussianInput(30, 30, 3, false, 7);
  for (int i = 10; i < 20; ++i) in.Q.row(i) = in.Q.row(i - 10);
  in.K.topRows(15) = in.Q.topRows(15);
  for (double t : {1e-3, 0.3}) expectMatchesCpu(in, softParams(t, 0.1, 2));
}

TEST(SimEspSoft, RandomSlicesMatchTheCpuReference) {
  EspParams p = softParams(0.02, 0.3, 2);
  p.slices.slicer = Slicer::Random;
  p.slices.L = 9;
  p.slices.seed = 11;
  expectMatchesCpu(gaussianInput(45, 45, 4, false, 8), p);
}

TEST(SimEspSoft, SortHardIsRefused) {
  EspParams p;
  EXPECT_THROW(espSoftOnDevice(gaussianInput(5, 5, 2, false, 9).cast<float>(), p, cuda::test::simulatedKernels()),
               InvalidArgument);
}

// Three tokens on one slice, q = k: the smallest request of the kernels' own API.
struct TinyProblem {
  std::vector<float> tokens{0.f, 1.f, 3.f};
  cuda::EspSoftProblem p;
  TinyProblem() {
    p.nq = p.nk = p.validQ = p.validK = 3;
    p.d = 1;
    p.q = p.k = tokens.data();
    p.slices = 1;
    p.sortedQ = p.sortedK = tokens;
    p.tokenQ = p.tokenK = {0, 1, 2};
    p.couplingRank = p.couplingKeyRank = {0, 1, 2};
    p.couplingMass = {1.f / 3, 1.f / 3, 1.f / 3};
    p.reach = 10.f;
  }
};

std::vector<float> unitCoefficients(const std::vector<float>& costs) { return std::vector<float>(costs.size(), 3.f); }

TEST(SimEspSoft, ACancelBetweenSlicesStopsTheRun) {
  const TinyProblem t;
  const auto& kernels = cuda::test::simulatedKernels();
  EXPECT_NO_THROW(kernels.espSoft(t.p, unitCoefficients, [] { return false; }));
  EXPECT_THROW(kernels.espSoft(t.p, unitCoefficients, [] { return true; }), Canceled);
}

TEST(SimEspSoft, UnsortedProjectionsAreRefusedWithAMessage) {
  TinyProblem t;
  t.p.sortedK = {1.f, 0.f, 3.f};
  EXPECT_THROW(cuda::test::simulatedKernels().espSoft(t.p, unitCoefficients, [] { return false; }), InvalidArgument);
}

// ---- The band planning (cuda/esp_soft_bands.h) ----

// Ascending values with gaps that make the bands narrow: each row's band holds its anchor and the neighbours
// within reach.
TEST(EspSoftBands, EachRowKeepsExactlyTheEntriesWithinReach) {
  const std::vector<float> sorted{0.f, 0.1f, 0.15f, 1.f, 1.05f, 3.f};
  const cuda::SoftSortBands b = cuda::softSortBands(sorted.data(), 6, 0.12f);
  EXPECT_EQ(b.lo, (std::vector<int>{0, 0, 1, 3, 3, 5}));
  EXPECT_EQ(b.len, (std::vector<int>{2, 3, 2, 2, 2, 1}));
}

// Brute force over every tile pair and entry of Λ: an entry that has a nonzero term in tile (A, B) must be
// inside both tiles' ranges, and (A, B) must be scheduled. Narrow bands (most pairs skipped) and the
// interpolation coupling with n_q > n_k (whose key ranks step back) included.
TEST(EspSoftBands, TheScheduleSkipsNoTileAndNoEntryThatContributes) {
  for (auto [nq, nk, reach, kind] :
       {std::tuple{100, 100, 0.05f, RankCoupling::NorthWestCorner}, {100, 37, 0.2f, RankCoupling::Interpolation},
        {37, 100, 0.2f, RankCoupling::NorthWestCorner}, {90, 40, 0.02f, RankCoupling::Interpolation},
        {64, 64, 100.f, RankCoupling::NorthWestCorner}}) {
    SCOPED_TRACE(std::to_string(nq) + "x" + std::to_string(nk) + " reach " + std::to_string(reach));
    auto sortedValues = [](int n, uint64_t seed) {
      const MatD g = test::gaussian(n, 1, seed);
      std::vector<float> v(g.data(), g.data() + n);
      std::sort(v.begin(), v.end());
      return v;
    };
    const std::vector<float> sq = sortedValues(nq, 1), sk = sortedValues(nk, 2);
    const cuda::SoftSortBands bq = cuda::softSortBands(sq.data(), nq, reach);
    const cuda::SoftSortBands bk = cuda::softSortBands(sk.data(), nk, reach);
    std::vector<int> ranks, keyRanks;
    for (const auto& e : rankCoupling(nq, nk, kind)) {
      ranks.push_back(e.r);
      keyRanks.push_back(e.s);
    }
    const cuda::TileEntries tq = cuda::tileEntries(bq, ranks), tk = cuda::tileEntries(bk, keyRanks);
    const cuda::TileSchedule s = cuda::tileSchedule(tq, tk);
    const auto inBand = [](const cuda::SoftSortBands& b, int r, int c) {
      return c >= b.lo[size_t(r)] && c < b.lo[size_t(r)] + b.len[size_t(r)];
    };
    int scheduled = 0;
    for (int A = 0; A * cuda::kEspTile < nq; ++A) {
      scheduled += s.keyCount[size_t(A)];
      for (int B = 0; B * cuda::kEspTile < nk; ++B) {
        const bool isScheduled = B >= s.keyFirst[size_t(A)] && B < s.keyFirst[size_t(A)] + s.keyCount[size_t(A)];
        for (size_t e = 0; e < ranks.size(); ++e) {
          bool reaches = false;
          for (int a = A * cuda::kEspTile; a < std::min(nq, (A + 1) * cuda::kEspTile); ++a)
            for (int b = B * cuda::kEspTile; b < std::min(nk, (B + 1) * cuda::kEspTile); ++b)
              reaches = reaches || (inBand(bq, ranks[e], a) && inBand(bk, keyRanks[e], b));
          if (!reaches) continue;
          ASSERT_TRUE(isScheduled) << "tile (" << A << ", " << B << ") holds entry " << e << " but is skipped";
          ASSERT_GE(int(e), std::max(tq.first[size_t(A)], tk.first[size_t(B)])) << "tile (" << A << ", " << B << ")";
          ASSERT_LT(int(e), std::min(tq.end[size_t(A)], tk.end[size_t(B)])) << "tile (" << A << ", " << B << ")";
        }
      }
    }
    const int tiles = int(tq.first.size() * tk.first.size());
    // Narrow bands pay: far fewer tiles than the dense product; the whole-row band visits every tile.
    if (reach >= 100.f) {
      EXPECT_EQ(scheduled, tiles);
    } else if (nq == 100 && nk == 100) {
      EXPECT_LT(scheduled, tiles / 2);
    }
  }
}

}  // namespace
}  // namespace tl
