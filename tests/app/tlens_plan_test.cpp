// End-to-end: `tlens plan` on the PyTorch reference fixtures and on a synthetic source.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fixture_case.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

std::vector<std::string> planArgs(const SinkhornCase& c, const std::string& out) {
  std::vector<std::string> args = {"plan", "--q", c.file("q"), "--k", c.file("k"), "--v", c.file("v"),
                                   "--op", c.op, "--out", out};
  if (c.hasMask) {
    args.push_back("--mask");
    args.push_back(c.file("mask"));
  }
  return args;
}

class TlensPlanFixture : public ::testing::TestWithParam<SinkhornCase> {};

TEST_P(TlensPlanFixture, Float64FilesMatchReference) {
  const SinkhornCase& c = GetParam();
  const std::string out = scratchDir("plan-" + testName(c));
  const CliRun run = runTlens(planArgs(c, out));
  ASSERT_EQ(run.status, 0) << run.err;
  for (const auto& [written, expected] : std::vector<std::pair<std::string, std::string>>{
           {"plan", "plan"}, {"output", "output"}, {"u", "u"}, {"v", "v_dual"}}) {
    EXPECT_EQ(readNpy(out + "/" + written + ".npy").dtype, "<f8") << written;
    EXPECT_EQ(compareWithInf(readNpyMatrix<double>(out + "/" + written + ".npy"), c.expected(expected), 1e-10),
              std::nullopt)
        << written;
  }
  EXPECT_TRUE(fileExists(out + "/metrics.json"));
}

TEST_P(TlensPlanFixture, Float32FilesAreFloat32AndMatchReference) {
  const SinkhornCase& c = GetParam();
  const std::string out = scratchDir("plan32-" + testName(c));
  auto args = planArgs(c, out);
  args.insert(args.end(), {"--precision", "f32"});
  const CliRun run = runTlens(args);
  ASSERT_EQ(run.status, 0) << run.err;
  for (const std::string name : {"plan", "output"}) {
    EXPECT_EQ(readNpy(out + "/" + name + ".npy").dtype, "<f4") << name;
    EXPECT_EQ(compareWithInf(readNpyMatrix<double>(out + "/" + name + ".npy"), c.expected(name), 1e-5), std::nullopt)
        << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TlensPlanFixture, ::testing::ValuesIn(loadCases<SinkhornCase>("sinkhorn")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TlensPlanFixture);

TEST(TlensPlan, SyntheticSourceWritesFilesAndMetrics) {
  const std::string out = scratchDir("synthetic");
  const CliRun run = runTlens({"plan", "--source", "synthetic:gaussian:n=24,d=8,seed=3", "--op",
                               "sinkhorn:T=4,eps=0.5", "--out", out});
  ASSERT_EQ(run.status, 0) << run.err;
  for (const std::string name : {"plan.npy", "u.npy", "v.npy", "metrics.json"})
    EXPECT_TRUE(fileExists(out + "/" + name)) << name;

  const auto metrics = nlohmann::json::parse(readText(out + "/metrics.json"));
  for (const std::string key : {"family", "operator", "params", "source", "precision", "n_q", "n_k", "d",
                                "marginal_errors", "marginal_error_history", "row_entropy", "mass_mismatch",
                                "seconds"})
    EXPECT_TRUE(metrics.contains(key)) << key;
  EXPECT_EQ(metrics["family"], "sinkhorn");
  EXPECT_EQ(metrics["params"]["T"], 4);
  EXPECT_EQ(metrics["params"]["eps"], 0.5);
  EXPECT_EQ(metrics["params"]["mask_mode"], "subsequence");  // default, resolved and recorded
  EXPECT_EQ(metrics["precision"], "f64");
  EXPECT_EQ(metrics["n_q"], 24);
  EXPECT_EQ(metrics["n_k"], 24);
  EXPECT_EQ(metrics["d"], 8);
  EXPECT_NE(metrics["source"].get<std::string>().find("gaussian"), std::string::npos);
  EXPECT_EQ(metrics["marginal_error_history"].size(), 4u);
  EXPECT_EQ(metrics["mass_mismatch"], false);
  // Even T ends on columns: columns are exact, rows are not (docs/conventions.md#budget).
  EXPECT_LT(metrics["marginal_errors"]["col_max"].get<double>(), 1e-12);
  EXPECT_GT(metrics["marginal_errors"]["row_max"].get<double>(), 1e-6);
  EXPECT_GT(metrics["row_entropy"]["mean"].get<double>(), 0.0);
  EXPECT_LE(metrics["row_entropy"]["mean"].get<double>(), std::log(24.0) + 1e-12);
  EXPECT_EQ(readNpyMatrix<double>(out + "/plan.npy").rows(), 24);
  const MatD output = readNpyMatrix<double>(out + "/output.npy");  // the gaussian source draws V too
  EXPECT_EQ(output.rows(), 24);
  EXPECT_EQ(output.cols(), 8);
}

TEST(TlensPlan, JsonFlagPrintsTheMetrics) {
  const std::string out = scratchDir("json");
  const CliRun run = runTlens({"plan", "--source", "synthetic:gaussian:n=8,d=4,seed=0", "--op", "softmax",
                               "--out", out, "--json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto printed = nlohmann::json::parse(run.out);
  EXPECT_EQ(printed, nlohmann::json::parse(readText(out + "/metrics.json")));
  EXPECT_EQ(printed["family"], "softmax");
  EXPECT_LT(printed["marginal_errors"]["row_max"].get<double>(), 1e-12);  // softmax rows are exact
}

// --no-plan: the same run without plan.npy; the output and the marginal errors are the dense run's, the column mass
// comes from the plan object's column sums, and the analyses that need the whole plan say they were skipped.
TEST(TlensPlan, NoPlanWritesEverythingButThePlan) {
  const std::string withPlan = scratchDir("with-plan"), without = scratchDir("no-plan");
  const std::vector<std::string> args = {"plan", "--source", "synthetic:gaussian:n=40,d=8,seed=2", "--op", "esp"};
  auto run = [&](const std::string& out, bool noPlan) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--out", out});
    if (noPlan) a.push_back("--no-plan");
    const CliRun r = runTlens(a);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(readText(out + "/metrics.json"));
  };
  const auto dense = run(withPlan, false), lazy = run(without, true);
  EXPECT_TRUE(fileExists(withPlan + "/plan.npy"));
  EXPECT_FALSE(fileExists(without + "/plan.npy"));
  EXPECT_EQ(readNpyMatrix<double>(without + "/output.npy"), readNpyMatrix<double>(withPlan + "/output.npy"));
  EXPECT_EQ(lazy["marginal_errors"], dense["marginal_errors"]);
  EXPECT_NEAR(lazy["column_mass"]["max_sum"].get<double>(), dense["column_mass"]["max_sum"].get<double>(), 1e-12);
  EXPECT_NEAR(lazy["column_mass"]["gini"].get<double>(), dense["column_mass"]["gini"].get<double>(), 1e-12);
  EXPECT_TRUE(lazy["row_entropy"].contains("skipped"));
  EXPECT_TRUE(lazy["rank"].contains("skipped"));
  EXPECT_TRUE(dense["row_entropy"].contains("mean"));
}

// A plan beyond the dense cap (2 GiB) is refused before the operator runs, saying how to go without it.
TEST(TlensPlan, APlanTooLargeToWriteIsRefusedWithTheWayRound) {
  const std::string out = scratchDir("too-large");
  const CliRun run = runTlens({"plan", "--source", "synthetic:gaussian:n=30000,d=4,seed=0", "--op", "esp",
                               "--precision", "f32", "--out", out});
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.err.find("3 GiB"), std::string::npos) << run.err;  // 30000² float32 entries
  EXPECT_NE(run.err.find("--no-plan"), std::string::npos) << run.err;
  EXPECT_FALSE(fileExists(out + "/metrics.json"));
}

}  // namespace
}  // namespace tl::testing
