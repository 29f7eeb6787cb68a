// Plans as objects (ops/transport_plan.h): every family's plan answers A·V, Aᵀ·W and its marginals exactly as
// its dense matrix does, structured families never form n×n until asked, and the dense matrix is capped.
#include "ops/transport_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "common/errors.h"
#include "ops/plan_result.h"
#include "ops/registry.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::matricesNear;

AttentionInput<double> tokens(int n, int d, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = test::gaussian(n, d, seed);
  in.K = test::gaussian(n, d, seed + 1);
  in.V = test::gaussian(n, 3, seed + 2);
  return in;
}

// Products and marginals of the plan object agree with its dense matrix (1e-12, float64).
void expectConsistent(const Plan<double>& plan, const std::string& label) {
  const MatD& A = plan.dense();
  const MatD V = test::gaussian(int(plan.cols()), 2, 7), W = test::gaussian(int(plan.rows()), 2, 8);
  EXPECT_TRUE(matricesNear(plan.apply(V), A * V, 1e-12)) << label;
  EXPECT_TRUE(matricesNear(plan.applyTransposed(W), A.transpose() * W, 1e-12)) << label;
  EXPECT_TRUE(matricesNear(plan.rowSums(), A.rowwise().sum(), 1e-12)) << label;
  EXPECT_TRUE(matricesNear(plan.colSums(), A.colwise().sum().transpose(), 1e-12)) << label;
  // Rows without the others, straight from the structure (a fresh copy would use the formed matrix).
  const TransportPlan<double>& structure = *plan.structure();
  EXPECT_TRUE(matricesNear(structure.rowBlock(3, 5), A.middleRows(3, 5), 1e-12)) << label;
  EXPECT_TRUE(matricesNear(structure.rowBlock(0, A.rows()), A, 1e-12)) << label;
  // Every row once, block by block (a dense plan's own rows).
  MatD scanned = MatD::Constant(A.rows(), A.cols(), -1.0);
  plan.forEachRowBlock(5, [&](Eigen::Index first, const auto& rows) { scanned.middleRows(first, rows.rows()) = rows; });
  EXPECT_TRUE(matricesNear(scanned, A, 1e-12)) << label;
  // A sparse plan's stored entries: each pair once, row-major, and every other entry 0.
  if (const auto entries = structure.storedEntries()) {
    MatD fromEntries = MatD::Zero(A.rows(), A.cols());
    for (size_t k = 0; k < entries->size(); ++k) {
      const PlanEntry<double>& e = (*entries)[k];
      if (k > 0) {
        const PlanEntry<double>& before = (*entries)[k - 1];
        EXPECT_TRUE(before.row < e.row || (before.row == e.row && before.col < e.col)) << label << " entry " << k;
      }
      fromEntries(e.row, e.col) += e.value;
    }
    EXPECT_TRUE(matricesNear(fromEntries, A, 1e-12)) << label;
  }
  // Display tiles (from the stored entries or row block by row block): 5 × 4 blocks of 12 × 12.
  const PooledPlan<double> tiles = structure.pooled(5, 4);
  ASSERT_EQ(tiles.mean.rows(), 5) << label;
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 4; ++c) {
      const auto block = A.block(tiles.rowStarts[size_t(r)], tiles.colStarts[size_t(c)],
                                 tiles.rowStarts[size_t(r) + 1] - tiles.rowStarts[size_t(r)],
                                 tiles.colStarts[size_t(c) + 1] - tiles.colStarts[size_t(c)]);
      EXPECT_NEAR(tiles.mean(r, c), block.mean(), 1e-12) << label;
      EXPECT_NEAR(tiles.max(r, c), block.maxCoeff(), 1e-12) << label;
    }
}

TEST(TransportPlan, TheBandAndTheSliceMatchingsAreSparse) {
  const auto& reg = OperatorRegistry::builtin();
  for (const char* spec : {"banded:W=2", "esp:tau=0.5"}) {
    const auto r = reg.create(reg.parse(spec))->run(tokens(12, 4, 3), noFeedback());
    const auto entries = r.plan.structure()->storedEntries();
    ASSERT_TRUE(entries.has_value()) << spec;
    EXPECT_LT(entries->size(), size_t(12 * 12 / 2)) << spec;  // band: 12·5 − 6; slices: at most L·12
  }
  EXPECT_FALSE(reg.create(reg.parse("lot:r=4"))->run(tokens(12, 4, 3), noFeedback()).plan.storedEntries());
}

TEST(TransportPlan, EveryFamilysPlanAnswersLikeItsDenseMatrix) {
  const auto& reg = OperatorRegistry::builtin();
  for (const char* spec : {"softmax", "sinkhorn:T=7", "esp:tau=0.5", "esp:sort=soft", "lot:r=4", "banded:W=3",
                           "banded:W=2,dustbin=true", "diff"}) {
    const auto op = reg.create(reg.parse(spec));
    const auto r = op->run(tokens(12, 4, 3), noFeedback());
    EXPECT_EQ(r.plan.isDense(), !op->structuredPlan()) << spec;
    expectConsistent(r.plan, spec);
    EXPECT_TRUE(matricesNear(*r.output, r.plan.dense() * *tokens(12, 4, 3).V, 1e-12)) << spec;
  }
}

// The registry's lazy output is the structured families' output without the plan (with and without padding, in
// both precisions); the dense families refuse it instead of forming n×n behind the caller's back.
TEST(TransportPlan, LazyOutputIsTheOutputOfRunForStructuredPlansOnly) {
  const auto& reg = OperatorRegistry::builtin();
  auto padded = tokens(11, 4, 3);
  padded.mask = Mask::Ones(11);
  (*padded.mask)(4) = false;
  for (const char* spec : {"esp:tau=0.5", "lot:r=4", "lot:r=3,T=4", "banded:W=3", "banded:W=2,dustbin=true"}) {
    const auto op = reg.create(reg.parse(spec));
    ASSERT_TRUE(op->structuredPlan()) << spec;
    for (const auto& in : {tokens(12, 4, 3), padded}) {
      EXPECT_TRUE(matricesNear(op->lazyOutput(in, noFeedback()), *op->run(in, noFeedback()).output, 1e-12)) << spec;
      const AttentionInput<float> single = in.cast<float>();
      EXPECT_TRUE(matricesNear(op->lazyOutput(single, noFeedback()), *op->run(single, noFeedback()).output, 1e-5f))
          << spec;
    }
  }
  for (const char* spec : {"softmax", "sinkhorn:T=3", "esp:sort=soft", "diff"})
    EXPECT_THROW((void)reg.create(reg.parse(spec))->lazyOutput(tokens(6, 4, 3), noFeedback()), InvalidArgument)
        << spec;
}

TEST(TransportPlan, PaddedTokensStayZeroInStructuredPlans) {
  auto in = tokens(10, 4, 5);
  in.mask = Mask::Ones(10);
  (*in.mask)(2) = (*in.mask)(7) = false;
  const auto& reg = OperatorRegistry::builtin();
  for (const char* spec : {"esp:tau=0.5", "lot:r=3", "banded:W=2"}) {
    const auto r = reg.create(reg.parse(spec))->run(in, noFeedback());
    EXPECT_FALSE(r.plan.isDense()) << spec;
    expectConsistent(r.plan, spec);
    for (int padded : {2, 7}) {
      EXPECT_EQ(r.plan.dense().row(padded).cwiseAbs().sum(), 0.0) << spec;
      EXPECT_EQ(r.plan.dense().col(padded).cwiseAbs().sum(), 0.0) << spec;
    }
  }
}

TEST(TransportPlan, TheDenseMatrixIsFormedOnceAndCastsKeepTheStructure) {
  const auto& reg = OperatorRegistry::builtin();
  const auto r32 = reg.create(reg.parse("lot:r=4"))->run(tokens(16, 4, 9).cast<float>(), noFeedback());
  EXPECT_EQ(&r32.plan.dense(), &r32.plan.dense()) << "formed once, then kept";
  const PlanResult<double> wide = r32.cast<double>();
  EXPECT_FALSE(wide.plan.isDense());
  EXPECT_STREQ(wide.plan.kind(), "low-rank");
  EXPECT_TRUE(matricesNear(wide.plan.dense(), r32.plan.dense().cast<double>(), 0.0));
  EXPECT_TRUE(matricesNear(*wide.output, r32.output->cast<double>(), 0.0));
}

// A float run seen in double (the Engine widens every run) hands its sparse entries through, widened, in their
// order: the heatmap's tiles and the 3-D view's lines read them that way.
TEST(TransportPlan, WidenedSparsePlansVisitTheirEntries) {
  const auto& reg = OperatorRegistry::builtin();
  for (const char* spec : {"banded:W=2", "esp:tau=0.5"}) {
    const auto r32 = reg.create(reg.parse(spec))->run(tokens(12, 4, 3).cast<float>(), noFeedback());
    const PlanResult<double> wide = r32.cast<double>();
    const auto narrow = r32.plan.storedEntries();
    ASSERT_TRUE(narrow.has_value()) << spec;
    std::vector<PlanEntry<double>> visited;
    ASSERT_TRUE(wide.plan.forEachStoredEntry([&](const PlanEntry<double>& e) { visited.push_back(e); })) << spec;
    ASSERT_EQ(visited.size(), narrow->size()) << spec;
    for (size_t k = 0; k < visited.size(); ++k) {
      EXPECT_EQ(visited[k].row, (*narrow)[k].row) << spec << " entry " << k;
      EXPECT_EQ(visited[k].col, (*narrow)[k].col) << spec << " entry " << k;
      EXPECT_EQ(visited[k].value, double((*narrow)[k].value)) << spec << " entry " << k;
    }
  }
  const auto lot = reg.create(reg.parse("lot:r=4"))->run(tokens(12, 4, 3).cast<float>(), noFeedback());
  EXPECT_FALSE(lot.cast<double>().plan.forEachStoredEntry([](const PlanEntry<double>&) { FAIL() << "visited"; }));
}

// A plan whose rows are cheap but whose dense matrix exceeds the cap: display tiles and row scans work
// without it (the heatmap and the 3-D view of a large structured plan).
class CheapRowsPlan final : public TransportPlan<double> {
 public:
  Eigen::Index rows() const override { return 4096; }
  Eigen::Index cols() const override { return 65537; }  // 4096 × 65537 doubles: just over 2 GiB
  MatD apply(const MatD& V) const override { return MatD::Ones(rows(), cols()) * V; }
  MatD applyTransposed(const MatD& W) const override { return MatD::Ones(cols(), rows()) * W; }
  MatD materialize() const override { throw std::logic_error("the whole matrix was formed"); }
  MatD rowBlock(Eigen::Index first, Eigen::Index count) const override {
    MatD block(count, cols());
    for (Eigen::Index i = 0; i < count; ++i) block.row(i).setConstant(double(first + i));
    return block;
  }
  const char* kind() const override { return "cheap rows"; }
};

TEST(TransportPlan, DisplayTilesAndRowScansOfAPlanBeyondTheCapNeverFormIt) {
  const Plan<double> plan(std::make_shared<const CheapRowsPlan>());
  EXPECT_THROW((void)plan.dense(), ResourceError);
  const PooledPlan<double> tiles = plan.pooled(4, 3);
  ASSERT_EQ(tiles.mean.rows(), 4);
  EXPECT_DOUBLE_EQ(tiles.mean(0, 0), 511.5);  // rows 0..1023 hold their index
  EXPECT_DOUBLE_EQ(tiles.max(3, 2), 4095.0);
  double largest = -1;
  plan.forEachRowBlock(1000, [&](Eigen::Index first, const auto& rows) {
    EXPECT_EQ(rows.rows(), std::min<Eigen::Index>(1000, 4096 - first));
    largest = std::max(largest, rows.maxCoeff());
  });
  EXPECT_EQ(largest, 4095.0);
}

TEST(TransportPlan, DenseMatricesBeyondTheCapAreRefusedWithWhatToAskInstead) {
  EXPECT_NO_THROW(checkMaterializable(1000, 1000, sizeof(double), "sliced"));
  EXPECT_TRUE(test::throwsWith<ResourceError>([] { checkMaterializable(65536, 65536, sizeof(double), "sliced"); },
                                              {"65536 queries", "32 GiB", "output", "display tiles"}));
  EXPECT_TRUE(Plan<double>().empty());
  EXPECT_EQ(Plan<double>().dense().size(), 0);
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { (void)Plan<double>(MatD::Ones(2, 3)).apply(MatD::Ones(2, 1)); },
                                                {"3 keys"}));
}

}  // namespace
}  // namespace tl
