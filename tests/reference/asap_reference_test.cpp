// Cross-check of the C++ ASAP operator (core/ops/asap/asap.cpp, sliced_potentials.cpp) against
// the independent PyTorch implementation scripts/reference/asap_reference.py (fixtures in
// tests/fixtures/asap, made by make_asap_fixtures.py; the compiled layer — slices + beta, or a teacher dual —
// is given as files). Every case runs through the registry from its operator string plus the file paths,
// the path `tlens` takes. Tolerances (docs/operators/asap.md#checks): 1e-10 in float64 (plan, output, final
// duals with -inf at the same places, the predicted dual asap_u and the features Φ); 1e-5 in float32 (plan,
// output) against the float64 fixture.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture_case.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kTolF32 = 1e-5;

struct AsapCase : ReferenceCase {
  std::string maskMode;
  std::vector<std::string> files;  // "slices", "beta" or "dual"

  explicit AsapCase(const nlohmann::json& c)
      : ReferenceCase("asap", c),
        maskMode(c.at("mask_mode").get<std::string>()),
        files(c.at("files").get<std::vector<std::string>>()) {}
  std::string opWithFiles() const {
    std::string text = op;
    for (const auto& f : files) text += "," + f + "=" + file(f);
    return text;
  }
  // Per-token extras describe the system that was solved: under subsequence only the valid tokens.
  MatD expectedExtra(const std::string& stem) const {
    return maskMode == "subsequence" ? expectedOnValid(stem) : expected(stem);
  }
};

std::unique_ptr<Operator> makeOperator(const AsapCase& c) {
  const auto& registry = OperatorRegistry::builtin();
  return registry.create(registry.parse(c.opWithFiles()));
}

class AsapFixture : public ::testing::TestWithParam<AsapCase> {};

TEST(AsapFixtureManifest, ListsTheCommittedCases) {
  EXPECT_EQ(checkManifest("asap", 19), std::nullopt);
}

TEST_P(AsapFixture, Float64MatchesReference) {
  const AsapCase& c = GetParam();
  const auto r = makeOperator(c)->run(c.input(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan.dense(), c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*r.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  EXPECT_EQ(compareWithInf(MatD(r.u), c.expected("u"), kTolF64), std::nullopt) << "u";
  EXPECT_EQ(compareWithInf(MatD(r.v), c.expected("v_dual"), kTolF64), std::nullopt) << "v";
  EXPECT_EQ(compareWithInf(r.extras.at("asap_u"), c.expectedExtra("u0"), kTolF64), std::nullopt) << "asap_u";
  if (c.files.front() == "slices") {
    EXPECT_EQ(compareWithInf(r.extras.at("asap_features"), c.expectedExtra("features"), kTolF64), std::nullopt)
        << "asap_features";
  }
}

TEST_P(AsapFixture, Float32MatchesReference) {
  const AsapCase& c = GetParam();
  const auto r = makeOperator(c)->run(c.input().cast<float>(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan.dense().cast<double>(), c.expected("plan"), kTolF32), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(r.output->cast<double>(), c.expected("output"), kTolF32), std::nullopt) << "output";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AsapFixture, ::testing::ValuesIn(loadCases<AsapCase>("asap")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AsapFixture);

}  // namespace
}  // namespace tl::testing
