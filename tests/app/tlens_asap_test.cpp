// `tlens asap-fit` end to end (docs/cli.md#asap-fit): on the PyTorch reference fixtures of tests/fixtures/asap_fit
// its beta.npy is the reference β, fit.json carries the documented fields, and `tlens plan --op asap:...`
// then runs the compiled layer from those files.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fixture_case.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

std::string fixture(const std::string& stem) { return fixtureRoot("asap_fit") + "/n17_L8_T4/" + stem + ".npy"; }

std::vector<std::string> fitArgs(const std::string& out, const std::string& kind) {
  return {"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual", fixture("u"), "--slices", fixture("slices"),
          "--fit", kind, "--lambda-b", "1e-3", "--out", out};
}

TEST(TlensAsapFit, LsWritesTheReferenceBetaAndItsReport) {
  const std::string out = scratchDir("asap_fit_ls");
  const CliRun run = runTlens(fitArgs(out, "ls"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("R²"), std::string::npos) << run.out;
  const MatD beta = readNpyMatrix<double>(out + "/beta.npy");
  EXPECT_EQ(compareWithInf(beta, readNpyMatrix<double>(fixture("beta_ls")), 1e-10), std::nullopt);
  const auto json = nlohmann::json::parse(readText(out + "/fit.json"));
  EXPECT_EQ(json.at("fit"), "ls");
  EXPECT_EQ(json.at("solver"), "cholesky");
  EXPECT_EQ(json.at("rows"), 5 * 17);
  EXPECT_DOUBLE_EQ(json.at("lambda_b").get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(json.at("lambda").get<double>(), 85 * 1e-3);  // n_rows·λ_B
  const auto manifest = manifestCases("asap_fit");
  EXPECT_NEAR(json.at("r2").get<double>(), manifest.at(0).at("r2_ls").get<double>(), 1e-10);
  EXPECT_NEAR(json.at("delta").get<double>(), manifest.at(0).at("delta_ls").get<double>(), 1e-10);
  EXPECT_NEAR(json.at("plan_ratio_band").get<double>(), std::exp(2 * json.at("delta").get<double>()), 1e-12);
  for (const char* key : {"objective", "iterations", "seconds", "fit_set_relative_error"})
    EXPECT_TRUE(json.contains(key)) << key;
  // The fitted layer is closer to the teacher than the β = 0 baseline on the fit set.
  const auto& errors = json.at("fit_set_relative_error");
  EXPECT_LT(errors.at("asap").get<double>(), errors.at("beta0_asap").get<double>());
  EXPECT_LT(errors.at("asap0").get<double>(), errors.at("beta0_asap0").get<double>());
}

TEST(TlensAsapFit, KlStopsAtTheGradientToleranceNearTheReference) {
  const std::string out = scratchDir("asap_fit_kl");
  const CliRun run = runTlens(fitArgs(out, "kl"));
  ASSERT_EQ(run.status, 0) << run.err;
  const auto json = nlohmann::json::parse(readText(out + "/fit.json"));
  EXPECT_EQ(json.at("fit"), "kl");
  EXPECT_TRUE(json.at("converged").get<bool>());
  const double gradient = json.at("gradient_norm").get<double>();
  EXPECT_LT(gradient, 1e-8);
  // Strong convexity (λ_min(∇²J) ≥ λ_B): ‖β − β*‖ ≤ ‖∇J(β)‖/λ_B.
  const MatD beta = readNpyMatrix<double>(out + "/beta.npy");
  const MatD reference = readNpyMatrix<double>(fixture("beta_kl"));
  EXPECT_LE((beta - reference).norm(), gradient / 1e-3 + 1e-12);
}

TEST(TlensAsapFit, PlanRunsTheFittedLayer) {
  const std::string fit = scratchDir("asap_fit_for_plan");
  ASSERT_EQ(runTlens(fitArgs(fit, "ls")).status, 0);
  // One head instance of the calibration set as plain n × d files.
  const std::vector<MatD> Q = readNpyStack(fixture("q")), K = readNpyStack(fixture("k"));
  const std::string in = scratchDir("asap_fit_head");
  writeNpy(in + "/q.npy", Q[0]);
  writeNpy(in + "/k.npy", K[0]);
  const std::string out = scratchDir("asap_fit_plan");
  const CliRun run = runTlens({"plan", "--q", in + "/q.npy", "--k", in + "/k.npy", "--op",
                               "asap:variant=asap0,slices=" + fixture("slices") + ",beta=" + fit + "/beta.npy", "--out",
                               out});
  ASSERT_EQ(run.status, 0) << run.err;
  // The source dual the operator used is Φβ − a with the fitted β.
  const MatD beta = readNpyMatrix<double>(fit + "/beta.npy");
  const MatD phi = readNpyMatrix<double>(out + "/asap_features.npy");
  const VecD a = Q[0].rowwise().squaredNorm() / (2.0 * std::sqrt(8.0));
  EXPECT_EQ(compareWithInf(readNpyMatrix<double>(out + "/asap_u.npy"), MatD(phi * beta - MatD(a)), 1e-12), std::nullopt);
}

TEST(TlensAsapFit, MakeSlicesWritesTheBankItFitted) {
  const std::string out = scratchDir("asap_fit_make_slices");
  const CliRun run = runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual", fixture("u"),
                               "--make-slices", "12", "--seed", "3", "--out", out});
  ASSERT_EQ(run.status, 0) << run.err;
  const MatD slices = readNpyMatrix<double>(out + "/slices.npy");
  EXPECT_EQ(slices.rows(), 12);
  EXPECT_EQ(slices.cols(), 8);
  EXPECT_NEAR(slices.row(5).norm(), 1.0, 1e-14);
  EXPECT_EQ(readNpyMatrix<double>(out + "/beta.npy").rows(), 12);
}

// The feature families (docs/operators/asap.md#feature-families): fit.json records the family; predict-both
// also writes key_beta.npy, and `tlens plan` runs P(f̂, ĝ) from the three files, with the key dual Ψβ_g − b
// up to the one mass constant, and inexact marginals.
TEST(TlensAsapFit, FeatureFamiliesAreRecordedAndPredictBothRunsInPlan) {
  std::string fit;  // predict-both's folder
  for (const std::string family : {"potentials", "raw", "rank-displacement", "predict-both"}) {
    SCOPED_TRACE(family);
    const std::string out = scratchDir("asap_fit_" + family);
    if (family == "predict-both") fit = out;
    std::vector<std::string> args = fitArgs(out, "ls");
    args.insert(args.end(), {"--features", family});
    const CliRun run = runTlens(args);
    ASSERT_EQ(run.status, 0) << run.err;
    const auto json = nlohmann::json::parse(readText(out + "/fit.json"));
    EXPECT_EQ(json.at("features"), family);
    EXPECT_EQ(json.contains("key_r2"), family == "predict-both");
    EXPECT_EQ(fileExists(out + "/key_beta.npy"), family == "predict-both");
    if (family == "potentials") {  // the default family is the reference fit
      EXPECT_EQ(compareWithInf(readNpyMatrix<double>(out + "/beta.npy"), readNpyMatrix<double>(fixture("beta_ls")), 1e-10),
                std::nullopt);
    }
  }
  const std::vector<MatD> Q = readNpyStack(fixture("q")), K = readNpyStack(fixture("k"));
  const std::string in = scratchDir("asap_fit_both_head");
  writeNpy(in + "/q.npy", Q[0]);
  writeNpy(in + "/k.npy", K[0]);
  const std::string out = scratchDir("asap_fit_both_plan");
  const CliRun run = runTlens({"plan", "--q", in + "/q.npy", "--k", in + "/k.npy", "--op",
                               "asap:features=predict-both,slices=" + fixture("slices") + ",beta=" + fit +
                                   "/beta.npy,key_beta=" + fit + "/key_beta.npy",
                               "--out", out});
  ASSERT_EQ(run.status, 0) << run.err;
  const MatD psi = readNpyMatrix<double>(out + "/asap_key_features.npy");
  const VecD b = K[0].rowwise().squaredNorm() / (2.0 * std::sqrt(8.0));
  const VecD v = readNpyMatrix<double>(out + "/v.npy").reshaped();
  const VecD expected = psi * readNpyMatrix<double>(fit + "/key_beta.npy") - MatD(b);
  const VecD shift = v - expected;  // one constant (the total mass), the same on every key
  EXPECT_LT(shift.maxCoeff() - shift.minCoeff(), 1e-9);
  const MatD plan = readNpyMatrix<double>(out + "/plan.npy");
  EXPECT_NEAR(plan.sum(), double(plan.rows()), 1e-9);
  EXPECT_GT((plan.colwise().sum().array() - 1).abs().maxCoeff(), 1e-3) << "no closure: the columns are not exact";
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual",
                                              fixture("u"), "--slices", fixture("slices"), "--features",
                                              "predict-both", "--fit", "kl", "--out", out}),
                                    2, {"predict-both", "fit=kl"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual",
                                              fixture("u"), "--slices", fixture("slices"), "--features", "sliced",
                                              "--out", out}),
                                    2, {"sliced", "rank-displacement"}));
}

TEST(TlensAsapFit, BadInputsGetOneLineAndExitTwo) {
  const std::string out = scratchDir("asap_fit_bad");
  // K's shape does not match Q's.
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("slices"), "--dual",
                                              fixture("u"), "--slices", fixture("slices"), "--out", out}),
                                    1, {"3-D"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual",
                                              fixture("slices"), "--slices", fixture("slices"), "--out", out}),
                                    2, {"[N, n]"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual",
                                              fixture("u"), "--slices", fixture("slices"), "--fit", "kl", "--lambda-b",
                                              "0", "--out", out}),
                                    2, {"lambda_b"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"asap-fit", "--q", fixture("q"), "--k", fixture("k"), "--dual",
                                              fixture("u"), "--out", out}),
                                    2, {"--slices"}));
  EXPECT_FALSE(fileExists(out + "/beta.npy"));
}

}  // namespace
}  // namespace tl::testing
