// Cross-check of the C++ LOT operator (core/ops/lot/) against the independent PyTorch implementation in
// scripts/reference/lot_reference.py (fixtures in tests/fixtures/lot, made by make_lot_fixtures.py with
// given pivots and mass logits, so no k-means has to agree). Tolerances: 1e-10 in float64 (plan, output,
// factors, masses, duals); 2e-5 relative in float32 (plan, output), against the float64 fixture
// (docs/operators/lot.md#checks).
#include <gtest/gtest.h>

#include "fixture_case.h"
#include "ops/lot/lot.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kRelTolF32 = 2e-5;

// op comes without the pivot file paths (see opWithFiles()).
struct LotFixture : ReferenceCase {
  int r = 1, T = 1;
  double eps = 1, massTemp = 0.5;

  explicit LotFixture(const nlohmann::json& c)
      : ReferenceCase("lot", c),
        r(c.at("r").get<int>()),
        T(c.at("T").get<int>()),
        eps(c.at("eps").get<double>()),
        massTemp(c.at("mass_temp").get<double>()) {}
  // The operator string `tlens` and the Session would carry: the manifest's op plus the pivot files.
  std::string opWithFiles() const { return op + ",pivots=" + file("pivots") + ",mass_logits=" + file("mass_logits"); }
  LotParams params() const {
    LotParams p;
    p.r = r;
    p.T = T;
    p.eps = eps;
    p.massTemp = massTemp;
    p.pivotInit = PivotInit::File;
    p.pivots = expected("pivots");
    p.massLogits = expected("mass_logits");
    return p;
  }
};

class LotFixtureTest : public ::testing::TestWithParam<LotFixture> {};

TEST(LotFixtureManifest, ListsTheCommittedCases) {
  EXPECT_EQ(checkManifest("lot", 12), std::nullopt);
}

TEST_P(LotFixtureTest, Float64MatchesReference) {
  const LotFixture& c = GetParam();
  const auto result = lotAttention(c.input(), c.params());
  ASSERT_TRUE(result.output.has_value());
  EXPECT_EQ(compareWithInf(result.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*result.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  for (const char* stem : {"P1", "P2", "u1", "v1", "u2", "v2"}) {
    EXPECT_EQ(compareWithInf(result.extras.at(std::string("lot_") + stem), c.expected(stem), kTolF64), std::nullopt)
        << stem;
  }
  EXPECT_EQ(compareWithInf(result.extras.at("lot_pivot_masses"), c.expected("w"), kTolF64), std::nullopt) << "w";
  EXPECT_EQ(compareWithInf(lotOutput(c.input(), c.params()), c.expected("output"), kTolF64), std::nullopt)
      << "lazy output";
}

TEST_P(LotFixtureTest, Float32MatchesReference) {
  const LotFixture& c = GetParam();
  const auto result = lotAttention(c.input().cast<float>(), c.params());
  ASSERT_TRUE(result.output.has_value());
  const MatD plan = c.expected("plan"), output = c.expected("output");
  EXPECT_EQ(compareWithInf(result.plan.dense().cast<double>(), plan, kRelTolF32 * plan.cwiseAbs().maxCoeff()), std::nullopt)
      << "plan";
  EXPECT_EQ(compareWithInf(result.output->cast<double>(), output, kRelTolF32 * output.cwiseAbs().maxCoeff()),
            std::nullopt)
      << "output";
}

// The path `tlens` and the Session take: the operator built by the registry from text naming the files.
TEST_P(LotFixtureTest, RegistryOperatorFromTextMatchesReference) {
  const LotFixture& c = GetParam();
  const auto& registry = OperatorRegistry::builtin();
  const auto op = registry.create(registry.parse(c.opWithFiles()));
  const auto result = op->run(c.input(), noFeedback());
  EXPECT_EQ(compareWithInf(result.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << c.op;
  EXPECT_FALSE(result.plan.isDense()) << "LOT keeps its factors";
  EXPECT_EQ(compareWithInf(*result.output, c.expected("output"), kTolF64), std::nullopt) << c.op;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LotFixtureTest, ::testing::ValuesIn(loadCases<LotFixture>("lot")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LotFixtureTest);

}  // namespace
}  // namespace tl::testing
