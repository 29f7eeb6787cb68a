// Cross-check of the C++ banded Sinkhorn forward (core/ops/banded/banded.cpp) against the independent PyTorch
// implementation scripts/reference/banded_reference.py (fixtures in tests/fixtures/banded, made by
// make_banded_fixtures.py). Every case runs through the registry from its operator string.
// Tolerances (docs/operators/banded.md#checks): 1e-10 in float64 (plan, output, duals in score coordinates
// with -inf at the same places, per-tile errors, dustbin masses, and the lazy A·V); 1e-5 in float32 (plan,
// output) against the float64 fixture.
#include <gtest/gtest.h>

#include <string>

#include "fixture_case.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kTolF32 = 1e-5;

// Dustbin masses are per real token of the solved system: under padding, the valid tokens only
// (ReferenceCase::expectedOnValid).
struct BandedCase : ReferenceCase {
  bool dustbin = false;

  explicit BandedCase(const nlohmann::json& c) : ReferenceCase("banded", c), dustbin(c.at("dustbin").get<bool>()) {}
};

std::unique_ptr<Operator> makeOperator(const BandedCase& c) {
  const auto& registry = OperatorRegistry::builtin();
  return registry.create(registry.parse(c.op));
}

class BandedFixture : public ::testing::TestWithParam<BandedCase> {};

TEST(BandedFixtureManifest, ListsTheCommittedCases) {
  EXPECT_EQ(checkManifest("banded", 16), std::nullopt);
}

TEST_P(BandedFixture, Float64MatchesReference) {
  const BandedCase& c = GetParam();
  const auto op = makeOperator(c);
  const auto r = op->run(c.input(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*r.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  EXPECT_EQ(compareWithInf(MatD(r.u), c.expected("u"), kTolF64), std::nullopt) << "u";
  EXPECT_EQ(compareWithInf(MatD(r.v), c.expected("v_dual"), kTolF64), std::nullopt) << "v";
  for (const char* stem : {"tile_row_errors", "tile_col_errors"})
    EXPECT_EQ(compareWithInf(r.extras.at(std::string("banded_") + stem), c.expected(stem), kTolF64), std::nullopt)
        << stem;
  if (c.dustbin) {
    for (const char* stem : {"dustbin_query_mass", "dustbin_key_mass"})
      EXPECT_EQ(compareWithInf(r.extras.at(std::string("banded_") + stem), c.expectedOnValid(stem), kTolF64),
                std::nullopt)
          << stem;
  }
  ASSERT_TRUE(op->structuredPlan());
  const auto structured = op->run(c.input(), noFeedback());
  EXPECT_FALSE(structured.plan.isDense());
  EXPECT_EQ(compareWithInf(*structured.output, c.expected("output"), kTolF64), std::nullopt)
      << "output through the band";
}

TEST_P(BandedFixture, Float32MatchesReference) {
  const BandedCase& c = GetParam();
  const auto r = makeOperator(c)->run(c.input().cast<float>(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan.dense().cast<double>(), c.expected("plan"), kTolF32), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(r.output->cast<double>(), c.expected("output"), kTolF32), std::nullopt) << "output";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BandedFixture, ::testing::ValuesIn(loadCases<BandedCase>("banded")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BandedFixture);

}  // namespace
}  // namespace tl::testing
