// Cross-check of the C++ ASAP operator (core/ops/asap/asap.cpp, sliced_potentials.cpp) against
// the independent PyTorch implementation scripts/reference/asap_reference.py (fixtures in
// tests/fixtures/asap, made by make_asap_fixtures.py; the compiled layer — slices + beta, or a teacher dual —
// is given as files). Every case runs through the registry from its operator string plus the file paths,
// the path `tlens` takes. Tolerances (docs/operators/asap.md#checks): 1e-10 in float64 (plan, output, final
// duals with -inf at the same places, the predicted dual asap_u and the features Φ); 1e-5 in float32 (plan,
// output) against the float64 fixture.
#include <gtest/gtest.h>

#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixture_case.h"
#include "io/npy.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kTolF64 = 1e-10;
constexpr double kTolF32 = 1e-5;

std::string asapRoot() { return std::string(TL_FIXTURE_DIR) + "/asap"; }

struct AsapCase {
  std::string name, op, maskMode;
  std::vector<std::string> files;  // "slices", "beta" or "dual"
  bool hasMask = false;

  std::string file(const std::string& stem) const { return asapRoot() + "/" + name + "/" + stem + ".npy"; }
  MatD expected(const std::string& stem) const { return readNpyMatrix<double>(file(stem)); }
  std::string opWithFiles() const {
    std::string text = op;
    for (const auto& f : files) text += "," + f + "=" + file(f);
    return text;
  }
  AttentionInput<double> input() const {
    AttentionInput<double> in;
    in.Q = expected("q");
    in.K = expected("k");
    in.V = expected("v");
    if (hasMask) in.mask = readNpyMask(file("mask"));
    return in;
  }
  // Per-token extras describe the system that was solved: under subsequence only the valid tokens.
  MatD expectedExtra(const std::string& stem) const {
    const MatD full = expected(stem);
    if (!hasMask || maskMode != "subsequence") return full;
    const Mask mask = readNpyMask(file("mask"));
    MatD valid(mask.count(), full.cols());
    for (Eigen::Index i = 0, r = 0; i < mask.size(); ++i)
      if (mask(i)) valid.row(r++) = full.row(i);
    return valid;
  }
};

void PrintTo(const AsapCase& c, std::ostream* os) { *os << c.name; }

std::vector<AsapCase> loadAsapCases() {
  std::ifstream in(asapRoot() + "/cases.json");
  if (!in) return {};
  std::vector<AsapCase> cases;
  const auto manifest = nlohmann::json::parse(in);
  for (const auto& c : manifest.at("cases")) {
    AsapCase a;
    a.name = c.at("name").get<std::string>();
    a.op = c.at("op").get<std::string>();
    a.maskMode = c.at("mask_mode").get<std::string>();
    a.files = c.at("files").get<std::vector<std::string>>();
    a.hasMask = c.at("mask").get<bool>();
    cases.push_back(a);
  }
  return cases;
}

std::unique_ptr<Operator> makeOperator(const AsapCase& c) {
  const auto& registry = OperatorRegistry::builtin();
  return registry.create(registry.parse(c.opWithFiles()));
}

class AsapFixture : public ::testing::TestWithParam<AsapCase> {};

TEST(AsapFixtureManifest, ListsTheCommittedCases) {
  ASSERT_GE(loadAsapCases().size(), 19u) << "missing or short " << asapRoot() << "/cases.json";
}

TEST_P(AsapFixture, Float64MatchesReference) {
  const AsapCase& c = GetParam();
  const auto r = makeOperator(c)->run(c.input(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan, c.expected("plan"), kTolF64), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(*r.output, c.expected("output"), kTolF64), std::nullopt) << "output";
  EXPECT_EQ(compareWithInf(MatD(r.u), c.expected("u"), kTolF64), std::nullopt) << "u";
  EXPECT_EQ(compareWithInf(MatD(r.v), c.expected("v_dual"), kTolF64), std::nullopt) << "v";
  EXPECT_EQ(compareWithInf(r.extras.at("asap_u"), c.expectedExtra("u0"), kTolF64), std::nullopt) << "asap_u";
  if (c.files.front() == "slices")
    EXPECT_EQ(compareWithInf(r.extras.at("asap_features"), c.expectedExtra("features"), kTolF64), std::nullopt)
        << "asap_features";
}

TEST_P(AsapFixture, Float32MatchesReference) {
  const AsapCase& c = GetParam();
  const auto r = makeOperator(c)->run(c.input().cast<float>(), noFeedback());
  ASSERT_TRUE(r.output.has_value());
  EXPECT_EQ(compareWithInf(r.plan.cast<double>(), c.expected("plan"), kTolF32), std::nullopt) << "plan";
  EXPECT_EQ(compareWithInf(r.output->cast<double>(), c.expected("output"), kTolF32), std::nullopt) << "output";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AsapFixture, ::testing::ValuesIn(loadAsapCases()), [](const auto& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
});
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AsapFixture);

}  // namespace
}  // namespace tl::testing
