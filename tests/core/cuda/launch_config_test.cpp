// Launch choices, memory estimates, messages and request validation of the CUDA backend (plain C++ parts of
// core/cuda): what the host decides before any kernel runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda/attention_problem.h"
#include "cuda/cuda_error.h"
#include "cuda/dense_run.h"
#include "cuda/launch_config.h"
#include "cuda/sinkhorn_cuda.h"
#include "support/test_util.h"

namespace tl::cuda {
namespace {

using tl::test::throwsWith;

TEST(LaunchConfig, KeySplitsFillTheGpuOnlyWhenRowsAreFew) {
  const DeviceLimits h100{132};
  // Plenty of row blocks (B·H = 32 heads × 32 row tiles at n = 4096): no split.
  EXPECT_EQ(chooseKeySplits(32 * 32, 32, h100), 1);
  // One head, n = 1000: 8 row blocks would leave the GPU idle; split the 8 key tiles.
  EXPECT_EQ(chooseKeySplits(8, 8, h100), 8);
  // One head, n = 65536: 512 row blocks ≥ 4·132.
  EXPECT_EQ(chooseKeySplits(512, 512, h100), 2);
  EXPECT_EQ(chooseKeySplits(1024, 512, h100), 1);
  // Never more splits than key tiles or kMaxKeySplits, never fewer than one.
  for (long long rows : {1LL, 3LL, 100LL, 10000LL})
    for (long long tiles : {1LL, 2LL, 5LL, 100LL, 1000LL}) {
      const int s = chooseKeySplits(rows, tiles, h100);
      EXPECT_GE(s, 1);
      EXPECT_LE(s, std::min<long long>(tiles, kMaxKeySplits));
    }
}

TEST(LaunchConfig, DisplayGroupsStayWithinSharedMemory) {
  const DeviceLimits h100{132};
  EXPECT_EQ(chooseDisplayCellsPerGroup(32, 1024, 1024, 1024, h100), 1024);  // 32k block rows: one group
  EXPECT_EQ(chooseDisplayCellsPerGroup(1, 1024, 4096, 1024, h100), 1024);   // capped by shared memory
  EXPECT_EQ(chooseDisplayCellsPerGroup(1, 1, 4096, 1024, h100), 8);         // one block row: 512 groups
  EXPECT_EQ(chooseDisplayCellsPerGroup(1, 7, 5, 1024, h100), 1);            // few rows: one cell per block
  for (long long rows : {1LL, 7LL, 1024LL})
    for (long long cols : {1LL, 5LL, 1000LL, 4096LL}) {
      const int g = chooseDisplayCellsPerGroup(2, rows, cols, 1024, h100);
      EXPECT_GE(g, 1);
      EXPECT_LE(g, std::min<long long>(cols, 1024));
      EXPECT_LE(ceilDiv(cols, g), 65535) << "grid y limit";
    }
}

TEST(LaunchConfig, MemoryMessagesNameTheSizeAndTheWayOut) {
  EXPECT_EQ(formatBytes(740), "740 B");
  EXPECT_EQ(formatBytes(12.3 * (1ull << 30)), "12.3 GiB");
  EXPECT_EQ(formatBytes(512.0 * (1 << 20)), "512.0 MiB");
  MemoryEstimate e;
  e.items = {{"q and k", 1e9}, {"dense plan", 549755813888.0}};
  EXPECT_EQ(e.largest().what, "dense plan");
  const std::string msg = outOfMemoryMessage("Sinkhorn plan path", e, 32, 65536, 65536, 8.0 * (1ull << 30));
  for (const char* needle : {"CUDA out of memory", "Sinkhorn plan path", "512.9 GiB", "batch 32 × 65536 × 65536",
                             "8.0 GiB free", "fused output path"})
    EXPECT_NE(msg.find(needle), std::string::npos) << msg << " lacks " << needle;
  e.items = {{"q and k", 2e9}};
  EXPECT_NE(outOfMemoryMessage("softmax fused output path", e, 1, 10, 10, 1e9).find("fewer heads"), std::string::npos);
}

TEST(LaunchConfig, DenseLayoutPadsAndCountsThePlanOnlyWhenAsked) {
  std::vector<float> q(2 * 4099 * 64), v(2 * 4099 * 32);
  AttentionProblem p;
  p.batch = 2;
  p.nq = p.nk = 4099;
  p.d = 64;
  p.dv = 32;
  p.q = p.k = q.data();
  p.v = v.data();
  p.logMu.assign(4099, -std::log(4099.f));
  p.logNu = p.logMu;
  CudaOptions o;
  o.errors = true;
  o.tileRows = o.tileCols = 1024;
  const DenseLayout L = denseLayout(p, sinkhornRunSpec(10, 0.5), o, DeviceLimits{132});
  EXPECT_EQ(L.ldQ, 4224);
  EXPECT_EQ(L.dPad, 64);
  EXPECT_EQ(L.dvPad, 64);
  EXPECT_EQ(L.passes, 11);  // T + 1: the last plan's column errors
  EXPECT_EQ(L.tileRows, 1024);
  const double withoutPlan = denseMemory(L, p, o).total();
  o.plan = true;
  const MemoryEstimate withPlan = denseMemory(L, p, o);
  EXPECT_EQ(withPlan.largest().what, "dense plan");
  EXPECT_NEAR(withPlan.total() - withoutPlan, 2.0 * 4099 * 4099 * 4, 1.0);
  // O(batch·n·(d + d_v)) without the plan: well under one n×n matrix per head.
  EXPECT_LT(withoutPlan, 2.0 * 4099 * 4099 * 4 / 4);
  o.errors = false;
  EXPECT_EQ(denseLayout(p, sinkhornRunSpec(10, 0.5), o, DeviceLimits{132}).passes, 10);
}

TEST(CudaErrors, MessagesSayWhatToDo) {
  EXPECT_EQ(cudaVersionText(13000), "13.0");
  EXPECT_EQ(cudaVersionText(12040), "12.4");
  const std::string driver = cudaFailureMessage(CudaFailure::OldDriver, "starting", "cudaErrorInsufficientDriver", 12020, 13000);
  EXPECT_NE(driver.find("supports CUDA 12.2 but this build needs CUDA 13.0"), std::string::npos) << driver;
  EXPECT_NE(driver.find("update the NVIDIA driver"), std::string::npos);
  EXPECT_NE(cudaFailureMessage(CudaFailure::NoDevice, "starting", "no device", 0, 0).find("CPU backend"), std::string::npos);
  EXPECT_NE(cudaFailureMessage(CudaFailure::OutOfMemory, "allocating v", "out of memory", 0, 0).find("fewer heads"),
            std::string::npos);
  const std::string fault = cudaFailureMessage(CudaFailure::KernelFault, "running LsePartialKernel", "illegal address", 0, 0);
  EXPECT_NE(fault.find("LsePartialKernel"), std::string::npos);
  EXPECT_NE(fault.find("restarts"), std::string::npos);
  // A CudaError is a ResourceError (the CLI exits 1, the GUI shows it).
  EXPECT_TRUE(throwsWith<ResourceError>([] { throw CudaError("x"); }, {"x"}));
}

// A valid small problem to break one field at a time.
struct ValidProblem {
  std::vector<float> q = std::vector<float>(2 * 3 * 4, 0.5f), k = std::vector<float>(2 * 5 * 4, -0.25f),
                     v = std::vector<float>(2 * 5 * 2, 1.f);
  AttentionProblem p;
  ValidProblem() {
    p.batch = 2;
    p.nq = 3;
    p.nk = 5;
    p.d = 4;
    p.dv = 2;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.logMu.assign(3, -std::log(3.f));
    p.logNu.assign(5, -std::log(5.f));
    p.scale = 3;
  }
};

TEST(Validation, AcceptsAValidProblem) {
  ValidProblem ok;
  EXPECT_NO_THROW(validateProblem(ok.p, {}, "Sinkhorn"));
}

TEST(Validation, RejectsBadRequestsWithTheirReason) {
  const float inf = std::numeric_limits<float>::infinity();
  auto rejects = [](auto&& breakIt, std::vector<std::string> needles, CudaOptions o = {}) {
    ValidProblem x;
    breakIt(x.p);
    return throwsWith<InvalidArgument>([&] { validateProblem(x.p, o, "Sinkhorn"); }, needles);
  };
  EXPECT_TRUE(rejects([](AttentionProblem& p) { p.batch = 0; }, {"batch"}));
  EXPECT_TRUE(rejects([](AttentionProblem& p) { p.nq = 0; }, {"empty"}));
  EXPECT_TRUE(rejects([](AttentionProblem& p) { p.v = nullptr; }, {"v is missing"}));
  EXPECT_TRUE(rejects([](AttentionProblem& p) { p.logMu.pop_back(); }, {"logMu", "2 entries", "3 queries"}));
  EXPECT_TRUE(rejects([&](AttentionProblem& p) { p.logNu[1] = inf; }, {"logNu[1]"}));
  EXPECT_TRUE(rejects([&](AttentionProblem& p) { p.logNu[1] = std::nanf(""); }, {"logNu[1]"}));
  EXPECT_TRUE(rejects([&](AttentionProblem& p) { p.logNu.assign(5, -inf); }, {"every key is inactive"}));
  EXPECT_TRUE(rejects([&](AttentionProblem& p) { p.logMu.assign(3, -inf); }, {"every query is inactive"}));
  EXPECT_TRUE(rejects([](AttentionProblem& p) { p.scale = 0; }, {"scale"}));
  CudaOptions tiles;
  tiles.tileRows = 4;
  EXPECT_TRUE(rejects([](AttentionProblem&) {}, {"display tiles 4 × 0"}, tiles));
  AttentionProblem p;
  p.batch = 2;
  p.nk = 3;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateSinkhornParams(p, {0, 1.0, {}}); }, {"T = 0"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateSinkhornParams(p, {3, -1.0, {}}); }, {"eps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateSinkhornParams(p, {3, 1.0, {0, 0, 0}}); },
                                          {"initial v has 3 entries", "batch × 3 = 6"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateSinkhornParams(p, {3, 1.0, {0, 0, 0, 0, NAN, 0}}); },
                                          {"initial v[4]", "not a dual"}));
}

TEST(Validation, NonFiniteInputsAreLocated) {
  ValidProblem x;
  x.k[1 * 5 * 4 + 2 * 4 + 3] = std::nanf("");  // head 1, row 2, column 3 of k
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { throwNonFinite(x.p, "softmax"); },
                                          {"k contains a non-finite value", "head 1, row 2, column 3"}));
  ValidProblem y;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { throwNonFinite(y.p, "softmax"); }, {"does not see"}));
}

TEST(Validation, DualsMustMatchTheProblem) {
  ValidProblem x;
  std::vector<float> u(6, 0.f), v(10, 0.f);
  EXPECT_NO_THROW(validateDuals(x.p, u, v, 1.0));
  v[3] = -std::numeric_limits<float>::infinity();
  EXPECT_NO_THROW(validateDuals(x.p, u, v, 1.0));
  u.pop_back();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateDuals(x.p, u, v, 1.0); }, {"u has 5 entries"}));
  u.push_back(std::nanf(""));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateDuals(x.p, u, v, 1.0); }, {"u[5]"}));
}

}  // namespace
}  // namespace tl::cuda
