// The live Sinkhorn cache (ops/sinkhorn/sinkhorn_cache.h): every run through it equals a fresh run bit for bit,
// it reuses what it says it reuses (scores for an eps change, scaled scores for a T change, the loop when T
// grows), and it drops what a change of input or mask mode makes wrong.
#include "ops/sinkhorn/sinkhorn_cache.h"

#include <gtest/gtest.h>

#include <memory>

#include "ops/sinkhorn/sinkhorn.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesIdentical;

std::shared_ptr<const AttentionInput<double>> sharedInput(int n, uint64_t seed, bool padded = false) {
  auto in = std::make_shared<AttentionInput<double>>();
  in->Q = gaussian(n, 6, seed);
  in->K = gaussian(n, 6, seed + 1000);
  in->V = gaussian(n, 3, seed + 2000);
  if (padded) {
    in->mask = Mask::Ones(n);
    (*in->mask)(1) = (*in->mask)(n - 2) = 0;
  }
  return in;
}

SinkhornParams params(int T, double eps, MaskMode mode = MaskMode::Subsequence) {
  SinkhornParams p;
  p.T = T;
  p.eps = eps;
  p.maskMode = mode;
  return p;
}

// Everything a run returns that a view or an export reads, compared bit for bit.
template <class T>
[[nodiscard]] ::testing::AssertionResult sameResult(const PlanResult<T>& a, const PlanResult<T>& b) {
  if (auto r = matricesIdentical(a.plan.dense(), b.plan.dense()); !r) return r << " (plan)";
  if (auto r = matricesIdentical(a.u, b.u); !r) return r << " (u)";
  if (auto r = matricesIdentical(a.v, b.v); !r) return r << " (v)";
  if (auto r = matricesIdentical(a.uHistory, b.uHistory); !r) return r << " (u history)";
  if (auto r = matricesIdentical(a.vHistory, b.vHistory); !r) return r << " (v history)";
  if (!a.output || !b.output) return ::testing::AssertionFailure() << "no output";
  if (auto r = matricesIdentical(*a.output, *b.output); !r) return r << " (output)";
  if (a.errorHistory.size() != b.errorHistory.size()) return ::testing::AssertionFailure() << "history lengths differ";
  for (size_t t = 0; t < a.errorHistory.size(); ++t) {
    const MarginalErrors &x = a.errorHistory[t], &y = b.errorHistory[t];
    if (x.rowMax != y.rowMax || x.colMax != y.colMax || x.rowMean != y.rowMean || x.colMean != y.colMean)
      return ::testing::AssertionFailure() << "marginal errors differ at step " << t + 1;
  }
  return ::testing::AssertionSuccess();
}

template <class T>
class SinkhornCacheTest : public ::testing::Test {
 protected:
  // Runs through the cache bound to `input` and checks the result against a fresh run.
  void runAndCompare(const std::shared_ptr<const AttentionInput<double>>& input, const SinkhornParams& p) {
    const AttentionInput<T> in = input->cast<T>();
    cache_.bindTo(input);
    const PlanResult<T> cached = sinkhornAttention(in, p, noFeedback(), &cache_);
    EXPECT_TRUE(sameResult(cached, sinkhornAttention(in, p))) << "T=" << p.T << " eps=" << p.eps;
  }
  SinkhornCache<T> cache_;
};

using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SinkhornCacheTest, Precisions);

TYPED_TEST(SinkhornCacheTest, AGrowingBudgetContinuesTheLoopAndEqualsAFreshRun) {
  const auto input = sharedInput(37, 1);
  this->runAndCompare(input, params(10, 0.3));
  EXPECT_FALSE(this->cache_.lastReuse().scores);
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 0);
  this->runAndCompare(input, params(25, 0.3));  // odd after even: ends on rows
  EXPECT_TRUE(this->cache_.lastReuse().scaledScores);
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 10);
  this->runAndCompare(input, params(26, 0.3));
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 25);
  this->runAndCompare(input, params(26, 0.3));  // the same budget again: only the plan is formed anew
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 26);
}

TYPED_TEST(SinkhornCacheTest, AShrinkingBudgetReusesTheScaledScoresAndRestarts) {
  const auto input = sharedInput(30, 2);
  this->runAndCompare(input, params(40, 0.5));
  this->runAndCompare(input, params(7, 0.5));
  EXPECT_TRUE(this->cache_.lastReuse().scaledScores);
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 0);
  this->runAndCompare(input, params(9, 0.5));  // continues from 7, not from the 40 dropped above
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 7);
}

TYPED_TEST(SinkhornCacheTest, AnEpsChangeReusesTheScoresButNotTheLoop) {
  const auto input = sharedInput(33, 3);
  this->runAndCompare(input, params(12, 0.5));
  this->runAndCompare(input, params(20, 0.25));
  EXPECT_TRUE(this->cache_.lastReuse().scores);
  EXPECT_FALSE(this->cache_.lastReuse().scaledScores);
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 0);
}

TYPED_TEST(SinkhornCacheTest, AnotherInputDropsEverything) {
  const auto first = sharedInput(28, 4), second = sharedInput(28, 5);
  this->runAndCompare(first, params(8, 0.5));
  this->runAndCompare(second, params(16, 0.5));
  EXPECT_FALSE(this->cache_.lastReuse().scores);
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 0);
}

TYPED_TEST(SinkhornCacheTest, MaskModesRunOnTheirOwnTokens) {
  const auto input = sharedInput(31, 6, true);
  this->runAndCompare(input, params(6, 0.5, MaskMode::Subsequence));
  this->runAndCompare(input, params(9, 0.5, MaskMode::Subsequence));
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 6);
  // keep-queries runs on all 31 tokens, subsequence on the 29 valid ones: nothing carries over either way.
  this->runAndCompare(input, params(12, 0.5, MaskMode::KeepQueries));
  EXPECT_FALSE(this->cache_.lastReuse().scores);
  this->runAndCompare(input, params(15, 0.5, MaskMode::KeepQueries));
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 12);
  this->runAndCompare(input, params(15, 0.5, MaskMode::Subsequence));
  EXPECT_FALSE(this->cache_.lastReuse().scores);
}

TYPED_TEST(SinkhornCacheTest, ACancelledRunLeavesTheCacheUsable) {
  const auto input = sharedInput(29, 7);
  this->runAndCompare(input, params(5, 0.5));
  Feedback cancelled;
  cancelled.cancel();
  this->cache_.bindTo(input);
  EXPECT_THROW(sinkhornAttention(input->cast<TypeParam>(), params(50, 0.5), cancelled, &this->cache_), Canceled);
  this->runAndCompare(input, params(11, 0.5));
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 5);
}

TYPED_TEST(SinkhornCacheTest, ARefusedEpsKeepsTheScoresForTheNextOne) {
  const auto input = sharedInput(27, 8);
  this->runAndCompare(input, params(5, 0.5));
  this->cache_.bindTo(input);
  // Far beyond the overflow bound of docs/conventions.md#overflow in either precision.
  EXPECT_THROW(sinkhornAttention(input->cast<TypeParam>(), params(5, 1e-300), noFeedback(), &this->cache_),
               InvalidArgument);
  this->runAndCompare(input, params(8, 0.5));
  EXPECT_TRUE(this->cache_.lastReuse().scores);
  EXPECT_EQ(this->cache_.lastReuse().resumedSteps, 0);
}

}  // namespace
}  // namespace tl
