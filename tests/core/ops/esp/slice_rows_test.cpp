// Hard ESP's entries indexed by row and by column (ops/esp/slice_rows.h) against the slice-by-slice block loops
// of ops/esp/esp_slice.h they replace: the dense rows are the same bits (each entry receives the same shares in
// the same order), the products agree to the rounding of summing a tie group's rows first, and a plan whose
// slices tie too much is not indexed and still gives the same plan through the block loops.
#include "ops/esp/slice_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/parallel.h"
#include "ops/esp/sliced_plan.h"
#include "support/esp_test_util.h"

namespace tl {
namespace {

using test::matricesNear;

struct Slices {
  std::vector<HardSlice> slices;
  Vec<double> weights;
  Eigen::Index nq, nk;
};

// L slices of random projections; with `grid`, values rounded to a grid of that many steps, so tokens tie.
Slices randomSlices(int nq, int nk, int L, int grid, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  auto projection = [&](int n) {
    VecD v(n);
    for (int i = 0; i < n; ++i) v(i) = grid > 0 ? std::round(normal(random) * grid) / grid : normal(random);
    return v;
  };
  Slices s{{}, VecD(L), nq, nk};
  const auto coupling = rankCoupling(nq, nk, RankCoupling::NorthWestCorner);
  for (int l = 0; l < L; ++l) {
    s.slices.push_back(hardSlice<double>(projection(nq), projection(nk), coupling, TiePolicy::Split));
    s.weights(l) = 0.5 + std::uniform_real_distribution<double>()(random);
  }
  s.weights /= s.weights.sum();
  return s;
}

// Σ_l n_q·w_l·U_l through addSlicePlan, slice by slice: the block loop the index replaces.
MatD blockDense(const Slices& s) {
  MatD A = MatD::Zero(s.nq, s.nk);
  for (size_t l = 0; l < s.slices.size(); ++l)
    addSlicePlan<double>(s.slices[l], double(s.nq) * s.weights(Eigen::Index(l)), A);
  return A;
}

MatD indexedDense(const SliceRows<double>& rows) {
  MatD A(rows.rows(), rows.cols);
  sliceRowsDense(rows, 0, A);
  return A;
}

TEST(SliceRows, DenseRowsAreTheBlockLoopsBitsWithAndWithoutTies) {
  for (const auto& [nq, nk, grid] : {std::tuple{60, 60, 0}, {50, 37, 0}, {41, 64, 0}, {60, 60, 16}, {45, 52, 12}}) {
    const Slices s = randomSlices(nq, nk, 9, grid, unsigned(nq + nk + grid));
    const auto byRow = sliceRows(s.slices, s.weights, s.nq, s.nk, false);
    const auto byColumn = sliceRows(s.slices, s.weights, s.nq, s.nk, true);
    ASSERT_TRUE(byRow && byColumn) << nq << " × " << nk << ", grid " << grid;
    int tied = 0;
    for (const HardSlice& slice : s.slices) tied += slice.tiedTokens;
    EXPECT_EQ(tied > 0, grid > 0) << "the grid cases are the ones with tie groups";
    const MatD expected = blockDense(s);
    EXPECT_TRUE(matricesNear(indexedDense(*byRow), expected, 0.0)) << nq << " × " << nk << ", grid " << grid;
    EXPECT_TRUE(matricesNear(indexedDense(*byColumn), MatD(expected.transpose()), 0.0));
    // A block of rows from the middle: the same rows.
    MatD middle(7, s.nk);
    sliceRowsDense(*byRow, 11, middle);
    EXPECT_TRUE(matricesNear(middle, MatD(expected.middleRows(11, 7)), 0.0));
  }
}

TEST(SliceRows, ProductsEqualTheBlockLoops) {
  std::mt19937 random(3);
  std::normal_distribution<double> normal;
  for (const auto& [nq, nk, grid] : {std::tuple{60, 60, 0}, {50, 37, 0}, {60, 60, 16}, {45, 52, 12}}) {
    const Slices s = randomSlices(nq, nk, 9, grid, unsigned(7 * nq + nk + grid));
    const MatD V = MatD::NullaryExpr(s.nk, 5, [&] { return normal(random); });
    const MatD W = MatD::NullaryExpr(s.nq, 5, [&] { return normal(random); });
    const MatD AV = slicedBlockProduct(s.slices, s.weights, s.nq, V, s.nq, false);
    const MatD AtW = slicedBlockProduct(s.slices, s.weights, s.nq, W, s.nk, true);
    // Without ties every block is one pair: the same products and sums in the same order.
    const double tolerance = grid == 0 ? 0.0 : 1e-13;
    EXPECT_TRUE(matricesNear(slicedProduct(s.slices, s.weights, s.nq, V, s.nq, false), AV, tolerance));
    EXPECT_TRUE(matricesNear(slicedProduct(s.slices, s.weights, s.nq, W, s.nk, true), AtW, tolerance));
    // And the plan object, through its index.
    const SlicedPlan<double> plan(s.slices, s.weights, s.nq, s.nk);
    EXPECT_TRUE(matricesNear(plan.apply(V), AV, tolerance));
    EXPECT_TRUE(matricesNear(plan.applyTransposed(W), AtW, tolerance));
    EXPECT_TRUE(matricesNear(plan.materialize(), blockDense(s), 0.0));
  }
}

// Every token of a slice on one value: one block of n_q·n_k pairs, more than kEntriesPerPair per coupled rank
// pair, so nothing is indexed and the plan keeps the block loops, with the same results.
TEST(SliceRows, SlicesThatTieTooMuchAreNotIndexed) {
  Slices s = randomSlices(40, 40, 3, 0, 5);
  const auto coupling = rankCoupling(40, 40, RankCoupling::NorthWestCorner);
  s.slices[1] = hardSlice<double>(VecD::Zero(40), VecD::Zero(40), coupling, TiePolicy::Split);
  EXPECT_FALSE(sliceRows(s.slices, s.weights, s.nq, s.nk, false));
  EXPECT_FALSE(sliceRows(s.slices, s.weights, s.nq, s.nk, true));
  const SlicedPlan<double> plan(s.slices, s.weights, s.nq, s.nk);
  const MatD V = MatD::Identity(40, 40);
  EXPECT_TRUE(matricesNear(plan.materialize(), blockDense(s), 0.0));
  EXPECT_TRUE(matricesNear(plan.apply(V), blockDense(s), 1e-15));
}

// Two tied queries and four keys under the interpolation coupling: the queries' ranks sit at keys 0 and 3, so
// keys 0 and 3 get two entries each and keys 1 and 2 none -- as many entries as keys, but not one per key. The
// column index must still hold every entry (a fixed place per key would lose one of each pair).
TEST(SliceRows, AsManyEntriesAsKeysIsNotOnePerKey) {
  const auto coupling = rankCoupling(2, 4, RankCoupling::Interpolation);
  Slices s{{hardSlice<double>(VecD::Zero(2), (VecD(4) << 0.1, 0.4, 0.2, 0.3).finished(), coupling, TiePolicy::Split)},
           VecD::Ones(1), 2, 4};
  ASSERT_EQ(sliceEntryCount(s.slices[0]), 4u);
  const auto byColumn = sliceRows(s.slices, s.weights, s.nq, s.nk, true);
  ASSERT_TRUE(byColumn);
  EXPECT_TRUE(matricesNear(indexedDense(*byColumn), MatD(blockDense(s).transpose()), 0.0));
  const MatD W = (MatD(2, 1) << 1.0, 10.0).finished();
  EXPECT_TRUE(matricesNear(sliceRowsProduct(*byColumn, W), slicedBlockProduct(s.slices, s.weights, s.nq, W, s.nk, true),
                           1e-15));
}

// Slices (equal sizes, no ties: each written in parallel) and rows split across threads: each entry has its
// place and each row is formed by one thread in the same order, so the same bits. L·n is above parallelFor's
// serial threshold.
TEST(SliceRows, SameBitsOnOneAndTwoThreads) {
  const int threadsBefore = parallelThreads();
  const Slices s = randomSlices(700, 700, 64, 0, 9);
  const MatD V = MatD::Random(700, 64);
  setParallelThreads(1);
  const auto oneRows = *sliceRows(s.slices, s.weights, s.nq, s.nk, false);
  const MatD one = sliceRowsProduct(oneRows, V), oneDense = indexedDense(oneRows);
  setParallelThreads(2);
  const auto twoRows = *sliceRows(s.slices, s.weights, s.nq, s.nk, false);
  const MatD two = sliceRowsProduct(twoRows, V), twoDense = indexedDense(twoRows);
  setParallelThreads(threadsBefore);
  EXPECT_TRUE(matricesNear(two, slicedBlockProduct(s.slices, s.weights, s.nq, V, s.nq, false), 0.0));
  EXPECT_TRUE(matricesNear(two, one, 0.0));
  EXPECT_TRUE(matricesNear(twoDense, oneDense, 0.0));
}

// Most slices untied and a few tied (float32 projections of a few thousand tokens, the benchmarks' case): the
// untied ones are placed without counting, the tied ones counted, and every row still lists its entries in
// slice order, on one thread or two. The column sums, added slice by slice, are the index by column's product
// with ones: the same bits in every column no tied block reaches, and equal to rounding in the others.
TEST(SliceRows, MixedTiedAndUntiedSlicesKeepTheBlockLoopsBits) {
  const int threadsBefore = parallelThreads();
  Slices s = randomSlices(600, 600, 12, 0, 4);
  const Slices tied = randomSlices(600, 600, 2, 20000, 5);  // a fine grid: a few ties per slice
  s.slices[3] = tied.slices[0];
  s.slices[8] = tied.slices[1];
  ASSERT_GT(s.slices[3].tiedTokens, 0);
  ASSERT_GT(s.slices[8].tiedTokens, 0);
  const MatD expected = blockDense(s);
  for (int threads : {1, 2}) {
    setParallelThreads(threads);
    const auto byRow = sliceRows(s.slices, s.weights, s.nq, s.nk, false);
    const auto byColumn = sliceRows(s.slices, s.weights, s.nq, s.nk, true);
    ASSERT_TRUE(byRow && byColumn);
    EXPECT_TRUE(matricesNear(indexedDense(*byRow), expected, 0.0)) << threads << " thread(s)";
    EXPECT_TRUE(matricesNear(indexedDense(*byColumn), MatD(expected.transpose()), 0.0)) << threads << " thread(s)";
    const SlicedPlan<double> plan(s.slices, s.weights, s.nq, s.nk);
    const VecD sums = plan.columnSums(), byIndex = plan.applyTransposed(MatD::Ones(s.nq, 1)).col(0);
    EXPECT_TRUE(matricesNear(MatD(sums), MatD(byIndex), 1e-15)) << threads << " thread(s)";
    // A column where no slice has two entries sums the same terms in the same order both ways.
    std::vector<bool> twoFromOneSlice(size_t(s.nk), false);
    for (const HardSlice& slice : s.slices) {
      std::vector<int> entries(size_t(s.nk), 0);
      forEachSliceEntry(slice, 1.0, [&](Eigen::Index, Eigen::Index j, double) {
        if (++entries[size_t(j)] > 1) twoFromOneSlice[size_t(j)] = true;
      });
    }
    int exact = 0;
    for (Eigen::Index j = 0; j < s.nk; ++j)
      if (!twoFromOneSlice[size_t(j)]) {
        EXPECT_EQ(sums(j), byIndex(j)) << "column " << j;
        ++exact;
      }
    EXPECT_GT(exact, s.nk / 2);
  }
  setParallelThreads(threadsBefore);
}

}  // namespace
}  // namespace tl
