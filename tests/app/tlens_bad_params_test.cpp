// End-to-end: bad operator parameters and parameter files (issue 3's list) → exit status 2 with one
// "tlens: error: ..." line naming the parameter and what was expected.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_runner.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

constexpr int kUsage = 2;
constexpr const char* kSource = "synthetic:gaussian:n=12,d=4,seed=1";  // n = 12, d = 4

MatD smoothMatrix(int rows, int cols) {
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = std::cos(0.9 * double(i));
  return m;
}

VecD smoothVector(int n) { return smoothMatrix(n, 1).col(0); }

MatD withNan(MatD m) {
  m(m.rows() - 1, 0) = std::nan("");
  return m;
}

class TlensBadParams : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratchDir("bad-params"); }
  std::string file(const std::string& name, const MatD& m) const {
    writeNpy(dir_ + "/" + name, m);
    return dir_ + "/" + name;
  }
  std::string file(const std::string& name, const VecD& v) const {
    writeNpy(dir_ + "/" + name, v);
    return dir_ + "/" + name;
  }
  CliRun plan(const std::string& op) const {
    return runTlens({"plan", "--source", kSource, "--op", op, "--out", dir_ + "/out"});
  }
  std::string asap(const std::string& slices, const std::string& beta, const std::string& more = "") const {
    return "asap:slices=" + slices + ",beta=" + beta + more;
  }
  std::string lot(const std::string& pivots, const std::string& logits, const std::string& more = "") const {
    return "lot:r=3,pivot_init=file,pivots=" + pivots + ",mass_logits=" + logits + more;
  }

  std::string dir_;
};

TEST_F(TlensBadParams, BudgetsTemperaturesAndUnknownParameters) {
  EXPECT_TRUE(failsWithOneErrorLine(plan("sinkhorn:T=0"), kUsage, {"'T'", "[1,"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("sinkhorn:eps=0"), kUsage, {"'eps'", "(0,"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("sinkhorn:eps=-1"), kUsage, {"'eps'"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("softmax:T=3"), kUsage, {"softmax", "'T'", "mask_mode"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("sinkhorn:tau=1"), kUsage, {"sinkhorn", "'tau'"}));
}

TEST_F(TlensBadParams, KeepQueriesOnlyWhereSupported) {
  EXPECT_EQ(plan("sinkhorn:mask_mode=keep-queries").status, 0);
  EXPECT_EQ(plan("softmax:mask_mode=keep-queries").status, 0);
  for (const std::string family : {"esp", "lot", "banded", "diff"}) {
    EXPECT_TRUE(failsWithOneErrorLine(plan(family + ":mask_mode=keep-queries"), kUsage,
                                      {family, "mask_mode", "keep-queries", "subsequence"}));
  }
}

TEST_F(TlensBadParams, AsapFiles) {
  const auto slices = file("TH.npy", smoothMatrix(3, 4)), beta = file("b.npy", smoothVector(3));
  ASSERT_EQ(plan(asap(slices, beta)).status, 0);
  EXPECT_TRUE(
      failsWithOneErrorLine(plan(asap(file("TH5.npy", smoothMatrix(3, 5)), beta)), kUsage, {"slices", "L×d", "d = 4"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan(asap(slices, file("b2.npy", smoothVector(2)))), kUsage, {"beta", "L = 3"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan(asap(file("THnan.npy", withNan(smoothMatrix(3, 4))), beta)), kUsage,
                                    {"slices", "finite"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan(asap(slices, beta, ",eps=0")), kUsage, {"'eps'"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan(asap(slices, beta, ",T=3")), kUsage, {"asap", "'T'"}));
}

TEST_F(TlensBadParams, LotFilesAndRanks) {
  const auto pivots = file("Z.npy", smoothMatrix(3, 4)), logits = file("w.npy", smoothVector(3));
  ASSERT_EQ(plan(lot(pivots, logits)).status, 0);
  EXPECT_TRUE(failsWithOneErrorLine(plan(lot(file("Z5.npy", smoothMatrix(3, 5)), logits)), kUsage, {"pivots", "3×4"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan(lot(file("Znan.npy", withNan(smoothMatrix(3, 4))), logits)), kUsage,
                                    {"pivots", "NaN"}));
  EXPECT_TRUE(
      failsWithOneErrorLine(plan(lot(pivots, file("w2.npy", smoothVector(2)))), kUsage, {"mass_logits", "r = 3"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("lot:r=13"), kUsage, {"r = 13", "n = 12"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("lot:T=0"), kUsage, {"'T'"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("lot:eps=0"), kUsage, {"'eps'"}));
}

TEST_F(TlensBadParams, BandedWidth) {
  EXPECT_TRUE(failsWithOneErrorLine(plan("banded:W=-1"), kUsage, {"'W'", "[0,"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("banded:eps=0"), kUsage, {"'eps'"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("banded:tau=1"), kUsage, {"banded", "'tau'"}));
}

TEST_F(TlensBadParams, EspParameters) {
  EXPECT_TRUE(failsWithOneErrorLine(plan("esp:eps=1"), kUsage, {"esp", "'eps'"}));
  EXPECT_TRUE(failsWithOneErrorLine(plan("esp:tau=-1"), kUsage, {"'tau'"}));
  EXPECT_TRUE(
      failsWithOneErrorLine(plan("esp:slicer=file,slices=" + file("S5.npy", smoothMatrix(2, 5))), kUsage, {"slices"}));
}

TEST_F(TlensBadParams, NanInQueriesThroughCompare) {
  const MatD q = withNan(smoothMatrix(12, 4));
  const CliRun run = runTlens(
      {"compare", "--q", file("q.npy", q), "--k", file("k.npy", smoothMatrix(12, 4)), "--ops", "softmax;sinkhorn"});
  EXPECT_TRUE(failsWithOneErrorLine(run, kUsage, {"q.npy"}));
}

}  // namespace
}  // namespace tl::testing
