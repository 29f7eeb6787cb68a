// End-to-end: `tlens plan` for every operator family with its file parameters, writing plan.npy, the
// family's extras and metrics.json with the analyses of analysis/summary.h.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fixture_case.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

constexpr const char* kSource = "synthetic:gaussian:n=12,d=4,seed=5";  // n = 12 tokens, head dimension d = 4

MatD smoothMatrix(int rows, int cols, double phase) {
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = std::sin(1.3 * double(i) + phase);
  return m;
}

class TlensFamilies : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratchDir("families"); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Runs `tlens plan --op op` on kSource into the folder `out` and returns metrics.json.
  nlohmann::json plan(const std::string& op, const std::vector<std::string>& files, const std::string& out = "out") {
    const CliRun run = runTlens({"plan", "--source", kSource, "--op", op, "--out", path(out)});
    EXPECT_EQ(run.status, 0) << run.err;
    for (const auto& name : files) EXPECT_TRUE(fileExists(path(out + "/" + name))) << op << ": " << name;
    return nlohmann::json::parse(readText(path(out + "/metrics.json")));
  }
  MatD written(const std::string& file) const { return readNpyMatrix<double>(path(file)); }

  std::string dir_;
};

// Every family's metrics carry the analyses with sane ranges (n = 12).
void expectAnalyses(const nlohmann::json& m) {
  for (const std::string key : {"marginal_errors", "mass_mismatch", "row_entropy", "column_mass", "rank", "seconds"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_GE(m["column_mass"]["gini"].get<double>(), 0.0);
  EXPECT_LE(m["column_mass"]["gini"].get<double>(), 11.0 / 12.0 + 1e-12);
  EXPECT_GE(m["rank"]["effective"].get<double>(), 1.0 - 1e-12);
  EXPECT_LE(m["rank"]["numerical"].get<int>(), 12);
  EXPECT_GT(m["rank"]["tolerance"].get<double>(), 0.0);
}

TEST_F(TlensFamilies, Softmax) {
  const auto m = plan("softmax", {"plan.npy", "output.npy", "metrics.json"});
  expectAnalyses(m);
  EXPECT_GT(m["column_mass"]["gini"].get<double>(), 0.0);  // rows normalised only: columns unequal
}

TEST_F(TlensFamilies, SinkhornColumnEndingHasBalancedColumns) {
  const auto m = plan("sinkhorn:T=20", {"plan.npy", "u.npy", "v.npy"});
  expectAnalyses(m);
  EXPECT_LT(m["column_mass"]["gini"].get<double>(), 1e-12);
  EXPECT_NEAR(m["column_mass"]["max_sum"].get<double>(), 1.0, 1e-12);
}

TEST_F(TlensFamilies, AsapWithSliceAndBetaFiles) {
  writeNpy(path("TH.npy"), smoothMatrix(3, 4, 0.2));  // L = 3 slices of dimension d = 4
  writeNpy(path("b.npy"), VecD(smoothMatrix(3, 1, 1.0).col(0)));
  const auto m = plan("asap:slices=" + path("TH.npy") + ",beta=" + path("b.npy") + ",variant=two-sided",
                      {"plan.npy", "asap_u.npy", "metrics.json"});
  expectAnalyses(m);
  EXPECT_EQ(m["family"], "asap");
  // Two-sided ASAP closes on the key side (closing=column): its last step is an exact column
  // normalisation, whatever the slices predicted (docs/operators/asap.md, "exact side").
  EXPECT_LT(m["marginal_errors"]["col_max"].get<double>(), 1e-12);
  EXPECT_LT(m["column_mass"]["gini"].get<double>(), 1e-12);
}

TEST_F(TlensFamilies, Banded) {
  const auto m = plan("banded:W=16,base_steps=15,tail_steps=2", {"plan.npy", "banded_tile_row_errors.npy"});
  expectAnalyses(m);
}

// A band that reaches every pair (W = n − 1 = 11) is plain Sinkhorn on the dense support, and re-centring the
// base changes no plan: base_steps + tail_steps full (row + column) steps are the column-ending Sinkhorn
// budget T = 2·(base_steps + tail_steps) single normalisations (docs/operators/banded.md#definition). The two
// runs differ only by rounding in the base's re-centring shifts: 1e-12 in float64 for entries of order 1, the
// tolerance of the same check in docs/operators/banded.md#checks. A small budget at eps = 0.3 keeps the plan
// far from convergence, so T = 9, 11 or 12 miss by more than 0.02.
TEST_F(TlensFamilies, FullBandIsSinkhornWithTwiceTheFullSteps) {
  (void)plan("banded:W=11,base_steps=3,tail_steps=2,eps=0.3", {"plan.npy", "output.npy"}, "banded");
  (void)plan("sinkhorn:T=10,eps=0.3", {"plan.npy", "output.npy"}, "sinkhorn");
  for (const std::string file : {"plan.npy", "output.npy"})
    EXPECT_EQ(compareWithInf(written("banded/" + file), written("sinkhorn/" + file), 1e-12), std::nullopt) << file;
}

TEST_F(TlensFamilies, EspHardIsExactlyDoublyStochastic) {
  const auto m = plan("esp:tau=1,slicer=axis", {"plan.npy", "esp_weights.npy", "esp_directions.npy", "metrics.json"});
  expectAnalyses(m);
  EXPECT_LT(m["column_mass"]["gini"].get<double>(), 1e-12);
}

TEST_F(TlensFamilies, LotWithPivotAndMassFilesHasRankAtMostR) {
  writeNpy(path("Z.npy"), smoothMatrix(3, 4, 0.7));  // r = 3 pivots of dimension d = 4
  writeNpy(path("w.npy"), VecD(smoothMatrix(3, 1, 2.0).col(0)));
  const auto m =
      plan("lot:r=3,pivot_init=file,pivots=" + path("Z.npy") + ",mass_logits=" + path("w.npy") + ",T=5,eps=1",
           {"plan.npy", "lot_P1.npy", "lot_P2.npy", "metrics.json"});
  expectAnalyses(m);
  EXPECT_LE(m["rank"]["numerical"].get<int>(), 3);  // A = P1 diag(1/w) P2 factors through r pivots
}

// A = softmax(Q1K1ᵀ/√h) − lambda·softmax(Q2K2ᵀ/√h): each softmax row sums to 1, so every row of A sums to
// 1 − lambda, and the row error reported against target 1 is |lambda| (docs/operators/diff.md). Sums of 12
// float64 entries of order 1: 1e-12.
TEST_F(TlensFamilies, DiffRowsSumToOneMinusLambda) {
  const auto m = plan("diff:lambda=0.3", {"plan.npy", "metrics.json"});
  expectAnalyses(m);
  const VecD rowSums = written("out/plan.npy").rowwise().sum();
  EXPECT_EQ(rowSums.size(), 12);
  for (Eigen::Index i = 0; i < rowSums.size(); ++i) EXPECT_NEAR(rowSums(i), 0.7, 1e-12) << "row " << i;
  EXPECT_NEAR(m["marginal_errors"]["row_max"].get<double>(), 0.3, 1e-12);
  // Rows with a negative entry are no distributions: no entropy (docs/formats.md).
  ASSERT_LT(written("out/plan.npy").minCoeff(), 0.0);
  EXPECT_TRUE(m["row_entropy"]["mean"].is_null()) << m["row_entropy"].dump();
}

}  // namespace
}  // namespace tl::testing
