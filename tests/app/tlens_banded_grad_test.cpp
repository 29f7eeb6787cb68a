// End-to-end: `tlens grad` on the autograd fixtures (tests/fixtures/banded_grad) and `tlens certify`, with the
// contract of docs/cli.md#grad and docs/cli.md#certify: files, fields, the loss being Σ G·output of
// `tlens plan`, and one-line errors with exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fixture_case.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

constexpr int kUsage = 2;

struct GradCase : ReferenceCase {
  explicit GradCase(const nlohmann::json& c) : ReferenceCase("banded_grad", c) {}
};

std::vector<std::string> inputArgs(const GradCase& c) {
  std::vector<std::string> args = {"--q", c.file("q"), "--k", c.file("k"), "--v", c.file("v"), "--op", c.op};
  if (c.hasMask) args.insert(args.end(), {"--mask", c.file("mask")});
  return args;
}

double scaledError(const MatD& actual, const MatD& expected) {
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols()) return HUGE_VAL;
  return (actual - expected).cwiseAbs().maxCoeff() / std::max(1.0, expected.cwiseAbs().maxCoeff());
}

class TlensGradFixture : public ::testing::TestWithParam<GradCase> {};

TEST_P(TlensGradFixture, SurrogateAndFullMatchAutograd) {
  const GradCase& c = GetParam();
  for (bool full : {false, true}) {
    const std::string out = scratchDir("grad-" + testName(c));
    auto args = inputArgs(c);
    args.insert(args.begin(), "grad");
    args.insert(args.end(), {"--loss-weights", c.file("g"), "--out", out});
    if (full) args.push_back("--full");
    const CliRun run = runTlens(args);
    ASSERT_EQ(run.status, 0) << run.err;
    const std::string prefix = full ? "full_" : "";
    for (const auto& [file, stem] : {std::pair{"dQ", "dq"}, {"dK", "dk"}, {"dV", "dv"}}) {
      EXPECT_EQ(readNpy(out + "/" + file + ".npy").dtype, "<f8");
      EXPECT_LE(scaledError(readNpyMatrix<double>(out + "/" + file + ".npy"), c.expected(prefix + stem)), 1e-10)
          << file << (full ? " (full)" : "");
    }
    const auto metrics = nlohmann::json::parse(readText(out + "/metrics.json"));
    EXPECT_EQ(metrics["mode"], full ? "full" : "surrogate");
    EXPECT_TRUE(metrics.contains("forward_seconds") && metrics.contains("backward_seconds"));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TlensGradFixture, ::testing::ValuesIn(loadCases<GradCase>("banded_grad")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TlensGradFixture);

// The loss is Σ G_ij·O_ij with O exactly the output.npy that `tlens plan` writes for the same arguments.
TEST(TlensGrad, LossIsTheWeightedOutputOfPlan) {
  const GradCase c(manifestCases("banded_grad").at(10));  // a masked case
  const std::string dir = scratchDir("grad-loss");
  auto planArgs = inputArgs(c);
  planArgs.insert(planArgs.begin(), "plan");
  planArgs.insert(planArgs.end(), {"--out", dir + "/plan"});
  ASSERT_EQ(runTlens(planArgs).status, 0);
  auto gradArgs = inputArgs(c);
  gradArgs.insert(gradArgs.begin(), "grad");
  gradArgs.insert(gradArgs.end(), {"--loss-weights", c.file("g"), "--out", dir + "/grad", "--precision", "f32"});
  const CliRun run = runTlens(gradArgs);
  ASSERT_EQ(run.status, 0) << run.err;
  const MatD output = readNpyMatrix<double>(dir + "/plan/output.npy");
  const double expected = (c.expected("g").array() * output.array()).sum();
  const auto metrics = nlohmann::json::parse(readText(dir + "/grad/metrics.json"));
  EXPECT_NEAR(metrics["loss"].get<double>(), expected, 1e-5 * std::max(1.0, std::abs(expected)));
  EXPECT_EQ(metrics["precision"], "f32");
  EXPECT_EQ(readNpy(dir + "/grad/dQ.npy").dtype, "<f4");
}

class TlensBandedErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratchDir("banded-errors");
  }
  CliRun grad(const std::string& op, const std::string& g, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"grad", "--q", c_.file("q"), "--k", c_.file("k"), "--v", c_.file("v"), "--op", op,
                                     "--loss-weights", g, "--out", dir_ + "/out"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runTlens(args);
  }
  CliRun certify(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"certify", "--q", c_.file("q"), "--k", c_.file("k"), "--json", dir_ + "/c.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runTlens(args);
  }
  std::string dir_;
  GradCase c_{manifestCases("banded_grad").at(2)};  // square_W3_R2: 14 tokens, d = 4, d_v = 3
};

TEST_F(TlensBandedErrors, OneLineAndExitTwo) {
  EXPECT_TRUE(failsWithOneErrorLine(grad("sinkhorn:T=4", c_.file("g")), kUsage, {"banded operator", "sinkhorn"}));
  writeNpy(dir_ + "/g_wrong.npy", MatD(MatD::Ones(14, 2)));
  EXPECT_TRUE(failsWithOneErrorLine(grad("banded:W=3", dir_ + "/g_wrong.npy"), kUsage, {"G is 14×2", "14×3"}));
  writeNpy(dir_ + "/k_wrong.npy", MatD(MatD::Ones(14, 5)));
  EXPECT_TRUE(failsWithOneErrorLine(
      runTlens({"grad", "--q", c_.file("q"), "--k", dir_ + "/k_wrong.npy", "--v", c_.file("v"), "--op", "banded:W=3",
                "--loss-weights", c_.file("g"), "--out", dir_ + "/out"}),
      kUsage));
  EXPECT_TRUE(failsWithOneErrorLine(certify({"--op", "softmax"}), kUsage, {"banded operator"}));
  EXPECT_TRUE(failsWithOneErrorLine(certify({"--op", "banded:W=3", "--tile", "0"}), kUsage, {"--tile"}));
  EXPECT_TRUE(failsWithOneErrorLine(certify({"--op", "banded:W=3", "--tau", "0"}), kUsage, {"--tau must be > 0"}));
  EXPECT_TRUE(failsWithOneErrorLine(certify({"--op", "banded:W=3", "--tau", "-1e-5"}), kUsage, {"--tau"}));
  EXPECT_TRUE(failsWithOneErrorLine(certify({"--op", "banded:W=3", "--tails", "0,x"}), kUsage, {"--tails"}));
  EXPECT_TRUE(failsWithOneErrorLine(
      certify({"--op", "banded:W=3", "--v", c_.file("v"), "--loss-weights", dir_ + "/g_wrong.npy"}), kUsage,
      {"G is 14×2"}));
}

// certify's JSON: the documented fields; Δ is of S/eps (halves when eps doubles); the selected R is the first
// listed depth whose ‖c_R‖∞ is within tau.
TEST(TlensCertify, WritesTheDocumentedFields) {
  const GradCase c(manifestCases("banded_grad").at(5));  // dense_n12_R2: every block positive
  const std::string dir = scratchDir("certify");
  nlohmann::json at[2];
  for (int k = 0; k < 2; ++k) {
    const std::string op = k == 0 ? "banded:W=11,base_steps=15,tail_steps=2,eps=1" : "banded:W=11,base_steps=15,tail_steps=2,eps=2";
    const std::string path = dir + "/c" + std::to_string(k) + ".json";
    const CliRun run = runTlens({"certify", "--q", c.file("q"), "--k", c.file("k"), "--v", c.file("v"), "--loss-weights",
                                 c.file("g"), "--op", op, "--tile", "4", "--tau", "1e-3", "--json", path});
    ASSERT_EQ(run.status, 0) << run.err;
    at[k] = nlohmann::json::parse(readText(path));
  }
  const auto& j = at[0];
  ASSERT_EQ(j["tiles"].size(), 9u);
  for (const char* key : {"row0", "row1", "col0", "col1", "delta", "rho_h", "one_minus_rho_h", "rho_range"})
    EXPECT_TRUE(j["tiles"][0].contains(key)) << key;
  EXPECT_EQ(j["tiles"][4]["row0"], 4);
  EXPECT_EQ(j["tiles"][4]["col1"], 8);
  ASSERT_EQ(j["strips"].size(), 3u);
  for (const char* key : {"granularity", "blocks", "median_rho_h", "p95_rho_h", "max_rho_h", "median_rho_range", "max_rho_range"})
    EXPECT_TRUE(j["summary"].contains(key)) << key;
  EXPECT_EQ(j["summary"]["granularity"], "strips");
  EXPECT_EQ(j["observed"].size(), 16u);
  for (size_t t = 0; t < 9; ++t)
    EXPECT_NEAR(at[1]["tiles"][t]["delta"].get<double>(), j["tiles"][t]["delta"].get<double>() / 2,
                1e-12 * j["tiles"][t]["delta"].get<double>());
  ASSERT_EQ(j["bias"]["rows"].size(), 4u);
  std::optional<int> first;
  for (const auto& row : j["bias"]["rows"]) {
    for (const char* key : {"R", "eta_norm2", "c_inf"}) EXPECT_TRUE(row.contains(key)) << key;
    if (!first && row["c_inf"].get<double>() <= 1e-3) first = row["R"].get<int>();
  }
  ASSERT_TRUE(first.has_value()) << j["bias"].dump();
  EXPECT_EQ(j["selected_R"], *first);
}

}  // namespace
}  // namespace tl::testing
