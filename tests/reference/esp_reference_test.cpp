// Cross-check of the C++ ESP operator (core/ops/esp/) against the independent PyTorch implementation
// scripts/reference/esp_reference.py (fixtures in tests/fixtures/esp, made by make_esp_fixtures.py). Every
// case runs through the registry from its operator string, the path `tlens` and the Session take.
// Tolerances (docs/operators/esp.md#checks): 1e-10 in float64 (plan, output, weights, costs, soft-to-hard
// distance, lazy output); matchings and tie counts exactly; 1e-4 in float32 for hard plans (float D_l of size
// ~2d move w by tau·ΔD).
#include <gtest/gtest.h>

#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixture_case.h"
#include "io/npy.h"
#include "ops/esp/esp.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kTolF32 = 1e-4;

std::string espRoot() { return std::string(TL_FIXTURE_DIR) + "/esp"; }

struct EspCase {
  std::string name, op, sort;
  bool hasMask = false, hasSlices = false;

  std::string file(const std::string& stem) const { return espRoot() + "/" + name + "/" + stem + ".npy"; }
  MatD expected(const std::string& stem) const { return readNpyMatrix<double>(file(stem)); }
  std::string opWithSlices() const { return hasSlices ? op + ",slices=" + file("slices") : op; }
  AttentionInput<double> input() const {
    AttentionInput<double> in;
    in.Q = readNpyMatrix<double>(file("q"));
    in.K = readNpyMatrix<double>(file("k"));
    in.V = readNpyMatrix<double>(file("v"));
    if (hasMask) in.mask = readNpyMask(file("mask"));
    return in;
  }
};

void PrintTo(const EspCase& c, std::ostream* os) { *os << c.name; }

std::vector<EspCase> loadEspCases() {
  std::ifstream in(espRoot() + "/cases.json");
  if (!in) return {};
  std::vector<EspCase> cases;
  const auto manifest = nlohmann::json::parse(in);
  for (const auto& c : manifest.at("cases")) {
    EspCase e;
    e.name = c.at("name").get<std::string>();
    e.op = c.at("op").get<std::string>();
    e.sort = c.at("sort").get<std::string>();
    e.hasMask = c.at("mask").get<bool>();
    e.hasSlices = c.at("slices").get<bool>();
    cases.push_back(e);
  }
  return cases;
}

// Extras are L×1 (vectors) or L×n_q; the fixture stores vectors 1-D, which read as n × 1.
MatD extra(const PlanResult<double>& r, const char* name) { return r.extras.at(name); }

class EspFixture : public ::testing::TestWithParam<EspCase> {};

TEST(EspFixtureManifest, ListsTheCommittedCases) {
  const auto cases = loadEspCases();
  ASSERT_GE(cases.size(), 20u) << "missing or short " << espRoot() << "/cases.json";
}

TEST_P(EspFixture, Float64MatchesReference) {
  const EspCase& c = GetParam();
  const auto& registry = OperatorRegistry::builtin();
  const auto op = registry.create(registry.parse(c.opWithSlices()));
  const auto r = op->run(c.input(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan, c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*r.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::weights), c.expected("weights"), kTolF64), std::nullopt) << "weights";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::costs), c.expected("costs"), kTolF64), std::nullopt) << "costs";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::matchings), c.expected("matchings"), 0.0), std::nullopt) << "matchings";
  EXPECT_EQ(compareWithInf(extra(r, EspExtras::ties), c.expected("ties"), 0.0), std::nullopt) << "ties";
  if (c.sort == "soft") {
    EXPECT_EQ(compareWithInf(extra(r, EspExtras::hardDistance), c.expected("hard_distance"), kTolF64), std::nullopt)
        << "hard distance";
  } else {
    ASSERT_TRUE(op->hasLazyApply());
    EXPECT_EQ(compareWithInf(op->applyLazy(c.input(), noFeedback()), c.expected("output"), kTolF64), std::nullopt)
        << "lazy output";
  }
}

// Float32 for the hard cases only: soft plans at small sort_temp amplify float rounding of the projections.
class EspHardFixture : public ::testing::TestWithParam<EspCase> {};

std::vector<EspCase> hardCases() {
  std::vector<EspCase> hard;
  for (const auto& c : loadEspCases())
    if (c.sort == "hard") hard.push_back(c);
  return hard;
}

TEST_P(EspHardFixture, Float32MatchesReference) {
  const EspCase& c = GetParam();
  const auto& registry = OperatorRegistry::builtin();
  const auto r = registry.create(registry.parse(c.opWithSlices()))->run(c.input().cast<float>(), noFeedback());
  EXPECT_EQ(compareWithInf(r.plan.cast<double>(), c.expected("plan"), kTolF32), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(r.output->cast<double>(), c.expected("output"), kTolF32), std::nullopt) << "output";
}

std::string caseName(const ::testing::TestParamInfo<EspCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EspFixture, ::testing::ValuesIn(loadEspCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Fixtures, EspHardFixture, ::testing::ValuesIn(hardCases()), caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EspFixture);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EspHardFixture);

}  // namespace
}  // namespace tl::testing
