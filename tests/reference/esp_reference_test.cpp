// Cross-check of the C++ ESP operator (core/ops/esp/) against the independent PyTorch implementation
// scripts/reference/esp_reference.py (fixtures in tests/fixtures/esp, made by make_esp_fixtures.py). Every
// case runs through the registry from its operator string, the path `tlens` and the Session take.
// Tolerances (docs/operators/esp.md#checks): 1e-10 in float64 (plan, output, weights, costs, soft-to-hard
// distance, lazy output); matchings and tie counts exactly; 1e-4 in float32 for hard plans (float D_l of size
// ~2d move w by tau·ΔD).
#include <gtest/gtest.h>

#include <string>

#include "fixture_case.h"
#include "ops/esp/esp.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kTolF32 = 1e-4;

struct EspCase : ReferenceCase {
  std::string sort;
  bool hasSlices = false;

  explicit EspCase(const nlohmann::json& c)
      : ReferenceCase("esp", c), sort(c.at("sort").get<std::string>()), hasSlices(c.at("slices").get<bool>()) {}
  std::string opWithSlices() const { return hasSlices ? op + ",slices=" + file("slices") : op; }
};

// Extras are L×1 (vectors) or L×n_q; the fixture stores vectors 1-D, which read as n × 1.
MatD extra(const PlanResult<double>& r, const char* name) { return r.extras.at(name); }

class EspFixture : public ::testing::TestWithParam<EspCase> {};

TEST(EspFixtureManifest, ListsTheCommittedCases) {
  EXPECT_EQ(checkManifest("esp", 20), std::nullopt);
}

TEST_P(EspFixture, Float64MatchesReference) {
  const EspCase& c = GetParam();
  const auto& registry = OperatorRegistry::builtin();
  const auto op = registry.create(registry.parse(c.opWithSlices()));
  const auto r = op->run(c.input(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*r.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::weights), c.expected("weights"), kTolF64), std::nullopt) << "weights";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::costs), c.expected("costs"), kTolF64), std::nullopt) << "costs";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::matchings), c.expected("matchings"), 0.0), std::nullopt) << "matchings";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::ties), c.expected("ties"), 0.0), std::nullopt) << "ties";
  if (c.sort == "soft") {
    EXPECT_EQ(compareWithInf(extra(r, EspExtras::hardDistance), c.expected("hard_distance"), kTolF64), std::nullopt)
        << "hard distance";
  } else {
    ASSERT_TRUE(op->structuredPlan());
    const auto structured = op->run(c.input(), noFeedback());
    EXPECT_FALSE(structured.plan.isDense());
    EXPECT_EQ(compareWithInf(*structured.output, c.expected("output"), kTolF64), std::nullopt)
        << "output through the slice matchings";
  }
}

// Float32 for the hard cases only: soft plans at small sort_temp amplify float rounding of the projections.
class EspHardFixture : public ::testing::TestWithParam<EspCase> {};

std::vector<EspCase> hardCases() {
  std::vector<EspCase> hard;
  for (const auto& c : loadCases<EspCase>("esp"))
    if (c.sort == "hard") hard.push_back(c);
  return hard;
}

TEST_P(EspHardFixture, Float32MatchesReference) {
  const EspCase& c = GetParam();
  const auto& registry = OperatorRegistry::builtin();
  const auto r = registry.create(registry.parse(c.opWithSlices()))->run(c.input().cast<float>(), noFeedback());
  EXPECT_EQ(compareWithInf(r.plan.dense().cast<double>(), c.expected("plan"), kTolF32), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(r.output->cast<double>(), c.expected("output"), kTolF32), std::nullopt) << "output";
}

std::string caseName(const ::testing::TestParamInfo<EspCase>& info) { return testName(info.param); }

INSTANTIATE_TEST_SUITE_P(Fixtures, EspFixture, ::testing::ValuesIn(loadCases<EspCase>("esp")), caseName);
INSTANTIATE_TEST_SUITE_P(Fixtures, EspHardFixture, ::testing::ValuesIn(hardCases()), caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EspFixture);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EspHardFixture);

}  // namespace
}  // namespace tl::testing
