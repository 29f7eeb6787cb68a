// Cross-check of the C++ CPU reference (core/ops/sinkhorn, core/ops/softmax) against the independent PyTorch
// implementation in scripts/reference/ (fixtures in tests/fixtures/sinkhorn, made by make_fixtures.py).
// Tolerances: 1e-10 in float64 (plan, output, final duals, -inf at the same places); 1e-5 in float32
// (plan, output), against the float64 fixture (docs/operators/sinkhorn.md#checks).
#include <gtest/gtest.h>

#include "fixture_case.h"
#include "ops/registry.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/softmax/softmax.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kTolF32 = 1e-5;

template <class T>
PlanResult<T> runCase(const SinkhornCase& c, const AttentionInput<T>& input) {
  if (c.family == "softmax") {
    SoftmaxParams p;
    p.maskMode = parseMaskMode(c.maskMode);
    return softmaxAttention(input, p);
  }
  SinkhornParams p;
  p.T = c.T;
  p.eps = c.eps;
  p.maskMode = parseMaskMode(c.maskMode);
  return sinkhornAttention(input, p);
}

MatD column(const VecD& v) { return v; }

class SinkhornFixture : public ::testing::TestWithParam<SinkhornCase> {};

TEST(SinkhornFixtureManifest, ListsTheCommittedCases) {
  EXPECT_EQ(checkManifest("sinkhorn", 20), std::nullopt);
}

TEST_P(SinkhornFixture, Float64MatchesReference) {
  const SinkhornCase& c = GetParam();
  const auto result = runCase<double>(c, c.input());
  ASSERT_TRUE(result.output.has_value());
  EXPECT_EQ(compareWithInf(result.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*result.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  EXPECT_EQ(compareWithInf(column(result.u), c.expected("u"), kTolF64), std::nullopt) << "u";
  EXPECT_EQ(compareWithInf(column(result.v), c.expected("v_dual"), kTolF64), std::nullopt) << "v";
}

TEST_P(SinkhornFixture, Float32MatchesReference) {
  const SinkhornCase& c = GetParam();
  const auto result = runCase<float>(c, c.input().cast<float>());
  ASSERT_TRUE(result.output.has_value());
  EXPECT_EQ(compareWithInf(result.plan.dense().cast<double>(), c.expected("plan"), kTolF32), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(result.output->cast<double>(), c.expected("output"), kTolF32), std::nullopt)
      << "output";
}

// The path `tlens` and the Session take: the operator built by the registry from the same text.
TEST_P(SinkhornFixture, RegistryOperatorFromTextMatchesReference) {
  const SinkhornCase& c = GetParam();
  const auto& registry = OperatorRegistry::builtin();
  const auto op = registry.create(registry.parse(c.op));
  const auto result = op->run(c.input(), noFeedback());
  EXPECT_EQ(compareWithInf(result.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << c.op;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SinkhornFixture, ::testing::ValuesIn(loadCases<SinkhornCase>("sinkhorn")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SinkhornFixture);

}  // namespace
}  // namespace tl::testing
