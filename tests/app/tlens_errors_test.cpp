// End-to-end: every bad input gets one "tlens: error: ..." line on stderr and the documented exit status
// (2 usage: flags, values, shapes, NaN/Inf; 1 files and runtime), never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "cli_runner.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kFailure = 1;

MatD gaussianLike(int rows, int cols) {
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = std::sin(1.7 * double(i) + 0.3);
  return m;
}

class TlensErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratchDir("errors");
    writeNpy(path("q.npy"), gaussianLike(6, 4));
    writeNpy(path("k.npy"), gaussianLike(6, 4));
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Runs `tlens plan` with the given Q and K files (and extra args) into a fresh output folder.
  CliRun plan(const std::string& q, const std::string& k, std::vector<std::string> extra = {},
              const std::string& op = "sinkhorn:T=3") const {
    std::vector<std::string> args = {"plan", "--q", q, "--k", k, "--op", op, "--out", dir_ + "/out"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runTlens(args);
  }

  // A valid .npy of Q, then edited: the corrupt-file cases.
  std::string corruptCopy(const std::string& name, const std::function<void(std::string&)>& edit) const {
    std::string bytes = readText(path("q.npy"));
    edit(bytes);
    writeText(path(name), bytes);
    return path(name);
  }

  std::string dir_;
};

void expectOneErrorLine(const CliRun& run, int status, const std::string& mentions = "") {
  EXPECT_TRUE(failsWithOneErrorLine(run, status, mentions.empty() ? std::vector<std::string>{} : std::vector{mentions}));
}

TEST_F(TlensErrors, ValidRunSucceedsSoTheFailuresBelowAreAboutTheirInput) {
  const CliRun run = plan(path("q.npy"), path("k.npy"));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.err.empty()) << run.err;
}

TEST_F(TlensErrors, UnknownFlagIsUsageError) {
  expectOneErrorLine(plan(path("q.npy"), path("k.npy"), {"--bogus", "1"}), kUsage, "--bogus");
}

TEST_F(TlensErrors, UnknownCommandIsUsageError) { expectOneErrorLine(runTlens({"plot"}), kUsage, "plot"); }

TEST_F(TlensErrors, MissingRequiredOptionIsUsageError) {
  expectOneErrorLine(runTlens({"plan", "--q", path("q.npy"), "--k", path("k.npy"), "--out", dir_}), kUsage, "--op");
}

TEST_F(TlensErrors, UnknownFamilyIsUsageError) {
  expectOneErrorLine(plan(path("q.npy"), path("k.npy"), {}, "sinkhorrn:T=3"), kUsage, "sinkhorrn");
}

TEST_F(TlensErrors, ZeroBudgetIsUsageErrorNamingT) {
  expectOneErrorLine(plan(path("q.npy"), path("k.npy"), {}, "sinkhorn:T=0"), kUsage, "T");
}

TEST_F(TlensErrors, BadPrecisionIsUsageError) {
  expectOneErrorLine(plan(path("q.npy"), path("k.npy"), {"--precision", "f16"}), kUsage, "f16");
}

TEST_F(TlensErrors, MissingFileIsFailure) {
  expectOneErrorLine(plan(path("absent.npy"), path("k.npy")), kFailure, "absent.npy");
}

TEST_F(TlensErrors, TruncatedNpyIsFailure) {
  const auto q = corruptCopy("truncated.npy", [](std::string& b) { b.resize(b.size() - 9); });
  expectOneErrorLine(plan(q, path("k.npy")), kFailure, "truncated.npy");
}

TEST_F(TlensErrors, WrongMagicIsFailure) {
  const auto q = corruptCopy("magic.npy", [](std::string& b) { b[1] = 'M'; });
  expectOneErrorLine(plan(q, path("k.npy")), kFailure, "magic.npy");
}

TEST_F(TlensErrors, FortranOrderIsFailure) {
  const auto q = corruptCopy("fortran.npy", [](std::string& b) {
    const std::string c = "'fortran_order': False", f = "'fortran_order': True ";
    const auto at = b.find(c);
    ASSERT_NE(at, std::string::npos);
    b.replace(at, c.size(), f);
  });
  expectOneErrorLine(plan(q, path("k.npy")), kFailure, "fortran.npy");
}

TEST_F(TlensErrors, HeadDimensionMismatchIsUsageError) {
  writeNpy(path("k5.npy"), gaussianLike(6, 5));
  expectOneErrorLine(plan(path("q.npy"), path("k5.npy")), kUsage);
}

TEST_F(TlensErrors, NanInQueriesIsUsageError) {
  MatD q = gaussianLike(6, 4);
  q(2, 1) = std::nan("");
  writeNpy(path("nan.npy"), q);
  expectOneErrorLine(plan(path("nan.npy"), path("k.npy")), kUsage);
}

TEST_F(TlensErrors, InfInKeysIsUsageError) {
  MatD k = gaussianLike(6, 4);
  k(0, 0) = INFINITY;
  writeNpy(path("inf.npy"), k);
  expectOneErrorLine(plan(path("q.npy"), path("inf.npy")), kUsage);
}

TEST_F(TlensErrors, MaskOfWrongLengthIsUsageError) {
  writeNpy(path("mask.npy"), VecD::Ones(7).eval());
  expectOneErrorLine(plan(path("q.npy"), path("k.npy"), {"--mask", path("mask.npy")}), kUsage);
}

TEST_F(TlensErrors, SourceAndFilesTogetherIsUsageError) {
  expectOneErrorLine(plan(path("q.npy"), path("k.npy"), {"--source", "synthetic:gaussian:n=4,d=2"}), kUsage);
}

TEST_F(TlensErrors, BenchWithBadSizeListIsUsageError) {
  expectOneErrorLine(runTlens({"bench", "--op", "softmax", "--n", "16,x"}), kUsage, "--n");
}

}  // namespace
}  // namespace tl::testing
