// The CUDA backend on a GPU against the CPU reference (core/ops sinkhorn/softmax loop in float64, with the
// tolerance scaled by the float32 run's own error; cuda_test_support.h). Every test that needs a device skips
// with the reason when there is none. Each case prints one "TLCUDA case=..." line with its error ratios and
// the binary ends with the worst ratio per field.
//
// Coverage: sizes {1, 2, 7, 33, 64, 257, 1000, 4099}, rectangles (7×33, 33×7, 257×64, 64×257, 1000×33,
// 33×1000, 4099×1000, 1000×4099), d ∈ {1, 16, 64, 128}, T ∈ {1, 2, 3, 10, 50}, eps ∈ {1, 0.05}, inactive keys
// and queries, f32/f16/bf16 inputs; the full product only at n ≤ 64. The TF32 kernels (CudaOptions::tf32) on a
// subset, with their own tolerance (matchesCpuTf32), and the bit-level properties that hold for both.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/bench_cuda.h"
#include "cuda/cuda_error.h"
#include "cuda/device_query.h"
#include "cuda/sinkhorn_cuda.h"
#include "cuda/softmax_cuda.h"
#include "cuda_test_support.h"

namespace tl::cuda::test {
namespace {

const ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new RatioSummary);

const DeviceInfo& gpu() {
  static const DeviceInfo info = deviceInfo(0);
  return info;
}

#define TL_REQUIRE_GPU()                                                                   \
  do {                                                                                     \
    if (!gpu().available) GTEST_SKIP() << "no CUDA device available: " << gpu().status;   \
  } while (0)

// Every kernel waits for completion, so a failure names the kernel that caused it.
CudaOptions checked(CudaOptions o) {
  o.syncEachKernel = true;
  return o;
}

CaseSpec spec(int batch, int nq, int nk, int d, int dv, int T, double eps, Inactive inactive,
              ElementType type = ElementType::F32) {
  static uint64_t seed = 1000;
  CaseSpec c;
  c.batch = batch;
  c.nq = nq;
  c.nk = nk;
  c.d = d;
  c.dv = dv;
  c.T = T;
  c.eps = eps;
  c.inactive = inactive;
  c.type = type;
  c.seed = seed++;
  return c;
}

// Display grid of a case: odd shapes that do not divide the sizes.
void tileShape(const CaseSpec& c, int& rows, int& cols) {
  rows = c.nq >= 1000 ? 1024 : 5;
  cols = c.nk >= 1000 ? 1023 : 3;
}

// Runs one case on the GPU and compares everything with the CPU; a failure (or an exception from the run,
// e.g. a kernel fault) names the case.
template <class Run>
void runCase(const std::string& label, const CaseSpec& c, int budget, double eps, Run&& run) {
  const CaseData data = makeCase(c);
  int rows, cols;
  tileShape(c, rows, cols);
  const CudaOptions o = checked(fullOptions(c, rows, cols));
  CudaAttentionResult got;
  try {
    got = run(data.problem(), o);
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << c.name() << " threw: " << e.what();
    return;
  }
  EXPECT_EQ(got.steps, budget) << c.name();
  EXPECT_TRUE(matchesCpu(data, got, o, budget, eps, label + c.name()));
}

void runSinkhornCase(const CaseSpec& c) {
  runCase("sinkhorn_", c, c.T, c.eps, [&](const AttentionProblem& p, const CudaOptions& o) {
    return sinkhornCuda(p, {c.T, c.eps}, o);
  });
}

void runSoftmaxCase(const CaseSpec& c) {
  runCase("softmax_", c, 1, 1.0, [](const AttentionProblem& p, const CudaOptions& o) { return softmaxCuda(p, o); });
}

// A TF32 run (CudaOptions::tf32) against the CPU: within the TF32 bound of the float64 loop and within
// kTf32InputsRatio times the float32 error of the loop on the TF32-rounded inputs (cuda_test_support.h).
template <class Run>
void runTf32Case(const std::string& label, const CaseSpec& c, int budget, double eps, Run&& run) {
  const CaseData data = makeCase(c);
  int rows, cols;
  tileShape(c, rows, cols);
  CudaOptions o = checked(fullOptions(c, rows, cols));
  o.tf32 = true;
  CudaAttentionResult got;
  try {
    got = run(data.problem(), o);
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << c.name() << " threw: " << e.what();
    return;
  }
  EXPECT_EQ(got.steps, budget) << c.name();
  EXPECT_TRUE(matchesCpuTf32(data, got, o, budget, eps, label + c.name()));
}

void runTf32SinkhornCase(const CaseSpec& c) {
  runTf32Case("tf32_sinkhorn_", c, c.T, c.eps, [&](const AttentionProblem& p, const CudaOptions& o) {
    return sinkhornCuda(p, {c.T, c.eps}, o);
  });
}

void runTf32SoftmaxCase(const CaseSpec& c) {
  runTf32Case("tf32_softmax_", c, 1, 1.0, [](const AttentionProblem& p, const CudaOptions& o) { return softmaxCuda(p, o); });
}

TEST(CudaKernels, DeviceInfoDescribesTheGpu) {
  TL_REQUIRE_GPU();
  std::printf("TLCUDA device %s\n", gpu().toJson().c_str());
  EXPECT_FALSE(gpu().name.empty());
  EXPECT_GT(gpu().smCount, 0);
  EXPECT_GT(gpu().totalBytes, 0);
  EXPECT_GT(gpu().freeBytes, 0);
  EXPECT_GE(gpu().driverVersion, gpu().runtimeVersion / 1000 * 1000) << "the driver is older than the runtime";
}

// Full product at small n: n ∈ {1, 2, 7, 33, 64} × d × T × eps × inactive (600 runs).
TEST(CudaKernels, SinkhornSmallFullProduct) {
  TL_REQUIRE_GPU();
  for (int n : {1, 2, 7, 33, 64})
    for (int d : {1, 16, 64, 128})
      for (int T : {1, 2, 3, 10, 50})
        for (double eps : {1.0, 0.05})
          for (Inactive in : {Inactive::None, Inactive::Keys, Inactive::KeysAndQueries})
            runSinkhornCase(spec(2, n, n, d, n % 2 ? 5 : 16, T, eps, in));
}

TEST(CudaKernels, SinkhornRectangles) {
  TL_REQUIRE_GPU();
  const int pairs[][2] = {{7, 33}, {33, 7}, {257, 64}, {64, 257}, {1000, 33}, {33, 1000}};
  for (const auto& pair : pairs)
    for (int d : {16, 64})
      for (int T : {1, 2, 3, 10})
        for (double eps : {1.0, 0.05})
          for (Inactive in : {Inactive::None, Inactive::KeysAndQueries})
            runSinkhornCase(spec(2, pair[0], pair[1], d, 8, T, eps, in));
}

TEST(CudaKernels, SinkhornLargeAndTypedCases) {
  TL_REQUIRE_GPU();
  using I = Inactive;
  const ElementType f16 = ElementType::F16, bf16 = ElementType::BF16;
  runSinkhornCase(spec(2, 257, 257, 128, 64, 50, 0.05, I::Keys));
  runSinkhornCase(spec(2, 1000, 1000, 64, 100, 10, 0.05, I::KeysAndQueries));  // two output chunks
  runSinkhornCase(spec(2, 1000, 1000, 1, 1, 3, 1.0, I::None));
  runSinkhornCase(spec(2, 1000, 1000, 64, 64, 10, 1.0, I::KeysAndQueries, bf16));
  runSinkhornCase(spec(2, 257, 1000, 16, 16, 10, 0.05, I::Keys, f16));
  runSinkhornCase(spec(1, 4099, 4099, 64, 64, 10, 1.0, I::KeysAndQueries));
  runSinkhornCase(spec(1, 4099, 4099, 16, 16, 2, 0.05, I::Keys));
  runSinkhornCase(spec(1, 4099, 1000, 128, 32, 3, 0.05, I::None));
  runSinkhornCase(spec(1, 1000, 4099, 64, 64, 50, 1.0, I::Keys));
  runSinkhornCase(spec(1, 4099, 4099, 128, 128, 1, 1.0, I::None, f16));
  runSinkhornCase(spec(5, 64, 64, 64, 0, 10, 0.05, I::KeysAndQueries));  // duals only, five heads
}

TEST(CudaKernels, SoftmaxCases) {
  TL_REQUIRE_GPU();
  using I = Inactive;
  for (int n : {1, 2, 7, 33, 64, 257})
    for (int d : {1, 16, 64, 128})
      for (Inactive in : {I::None, I::Keys, I::KeysAndQueries}) runSoftmaxCase(spec(2, n, n, d, 16, 1, 1.0, in));
  for (const auto& pair : {std::pair<int, int>{7, 33}, {33, 7}, {257, 64}, {1000, 33}, {33, 1000}})
    runSoftmaxCase(spec(2, pair.first, pair.second, 64, 70, 1, 1.0, I::KeysAndQueries));
  runSoftmaxCase(spec(2, 1000, 1000, 64, 64, 1, 1.0, I::Keys, ElementType::BF16));
  runSoftmaxCase(spec(1, 4099, 4099, 64, 64, 1, 1.0, I::KeysAndQueries));
  runSoftmaxCase(spec(1, 4099, 4099, 128, 128, 1, 1.0, I::None, ElementType::F16));
}

// TF32: n ∈ {1, 7, 33, 64} × d × T ∈ {1, 3, 10} × eps × {all, keys and queries inactive} (192 runs).
TEST(CudaKernels, Tf32SinkhornSmallProduct) {
  TL_REQUIRE_GPU();
  for (int n : {1, 7, 33, 64})
    for (int d : {1, 16, 64, 128})
      for (int T : {1, 3, 10})
        for (double eps : {1.0, 0.05})
          for (Inactive in : {Inactive::None, Inactive::KeysAndQueries})
            runTf32SinkhornCase(spec(2, n, n, d, n % 2 ? 5 : 16, T, eps, in));
}

TEST(CudaKernels, Tf32SinkhornRectanglesAndLargeCases) {
  TL_REQUIRE_GPU();
  using I = Inactive;
  const int pairs[][2] = {{7, 33}, {33, 7}, {257, 64}, {64, 257}, {1000, 33}, {33, 1000}};
  for (const auto& pair : pairs)
    for (double eps : {1.0, 0.05}) runTf32SinkhornCase(spec(2, pair[0], pair[1], 64, 8, 3, eps, I::KeysAndQueries));
  runTf32SinkhornCase(spec(2, 1000, 1000, 64, 100, 10, 1.0, I::KeysAndQueries));  // two output chunks
  runTf32SinkhornCase(spec(2, 257, 1000, 16, 16, 10, 0.05, I::Keys, ElementType::F16));
  runTf32SinkhornCase(spec(1, 4099, 4099, 64, 64, 10, 1.0, I::KeysAndQueries));   // the benchmark's shape
  runTf32SinkhornCase(spec(1, 4099, 1000, 128, 32, 3, 0.05, I::None));
  runTf32SinkhornCase(spec(5, 64, 64, 64, 0, 10, 0.05, I::KeysAndQueries));  // duals only, five heads
}

TEST(CudaKernels, Tf32SoftmaxCases) {
  TL_REQUIRE_GPU();
  using I = Inactive;
  for (int n : {1, 7, 64, 257})
    for (int d : {1, 16, 64, 128}) runTf32SoftmaxCase(spec(2, n, n, d, 16, 1, 1.0, I::KeysAndQueries));
  runTf32SoftmaxCase(spec(2, 33, 1000, 64, 70, 1, 1.0, I::KeysAndQueries));
  runTf32SoftmaxCase(spec(2, 1000, 1000, 64, 64, 1, 1.0, I::Keys, ElementType::BF16));
  runTf32SoftmaxCase(spec(1, 4099, 4099, 64, 64, 1, 1.0, I::KeysAndQueries));
}

TEST(CudaKernels, FullResolutionTilesAreThePlanBitForBit) {
  TL_REQUIRE_GPU();
  for (bool tf32 : {false, true})
    for (const CaseSpec& c : {spec(2, 257, 1000, 64, 8, 3, 0.05, Inactive::KeysAndQueries),
                              spec(1, 131, 70, 16, 0, 2, 1.0, Inactive::None)}) {
      const CaseData data = makeCase(c);
      CudaOptions o = checked({});
      o.plan = true;
      o.tileRows = c.nq;
      o.tileCols = c.nk;
      o.tf32 = tf32;
      const CudaAttentionResult r = sinkhornCuda(data.problem(), {c.T, c.eps}, o);
      EXPECT_EQ(r.tiles.mean, r.plan) << c.name() << " tf32 " << tf32;
      EXPECT_EQ(r.tiles.max, r.plan) << c.name() << " tf32 " << tf32;
    }
}

// Row and column half-steps form q_i·k_j with q and k in opposite operand roles (A = Q in a row pass, A = K in
// a column pass), and tiles place (i, j) at different register slots. The plan from zero duals is
// scale·exp(x_ij) exactly, so planning (Q, K) and (K, Q) compares the two roles bit for bit: FP32 FMAs are
// symmetric by construction (one FMA per k in increasing k); for TF32 this checks that the tensor core's sum of
// the same exact products in the same k-steps does not depend on the operand roles or the slot (the CPU
// emulation's sum does not, by construction).
TEST(CudaKernels, SwappingQueriesAndKeysTransposesTheScoresBitForBit) {
  TL_REQUIRE_GPU();
  const CaseSpec c = spec(1, 300, 257, 64, 0, 1, 0.5, Inactive::None);
  const CaseData data = makeCase(c);
  AttentionProblem qk = data.problem(), kq = data.problem();
  std::swap(kq.q, kq.k);
  std::swap(kq.nq, kq.nk);
  std::swap(kq.logMu, kq.logNu);
  kq.scale = 1.f;
  qk.scale = 1.f;
  for (bool tf32 : {false, true}) {
    CudaOptions o = checked({});
    o.plan = true;
    o.errors = false;
    o.tf32 = tf32;
    const CudaAttentionResult a = planFromDualsCuda(qk, std::vector<float>(300, 0.f), std::vector<float>(257, 0.f), c.eps, o);
    const CudaAttentionResult b = planFromDualsCuda(kq, std::vector<float>(257, 0.f), std::vector<float>(300, 0.f), c.eps, o);
    long long differ = 0;
    for (int i = 0; i < 300; ++i)
      for (int j = 0; j < 257; ++j) differ += a.plan[size_t(i) * 257 + j] != b.plan[size_t(j) * 300 + i];
    std::printf("TLCUDA symmetry tf32=%d entries_differing=%lld of %d\n", int(tf32), differ, 300 * 257);
    EXPECT_EQ(differ, 0) << "tf32 " << tf32;
  }
}

TEST(CudaKernels, RunsAreDeterministic) {
  TL_REQUIRE_GPU();
  const CaseSpec c = spec(2, 1000, 999, 64, 64, 5, 0.05, Inactive::KeysAndQueries);
  const CaseData data = makeCase(c);
  CudaOptions o = fullOptions(c, 100, 77);
  for (int variant = 0; variant < 4; ++variant) {
    const int softmax = variant % 2;
    o.tf32 = variant >= 2;
    const auto run = [&] { return softmax ? softmaxCuda(data.problem(), o) : sinkhornCuda(data.problem(), {c.T, c.eps}, o); };
    const CudaAttentionResult a = run(), b = run();
    EXPECT_EQ(a.u, b.u);
    EXPECT_EQ(a.v, b.v);
    EXPECT_EQ(a.output, b.output);
    EXPECT_EQ(a.plan, b.plan);
    EXPECT_EQ(a.tiles.mean, b.tiles.mean);
    EXPECT_EQ(a.uHistory, b.uHistory);
  }
}

TEST(CudaKernels, PlanFromDualsReproducesTheCpuPlan) {
  TL_REQUIRE_GPU();
  const CaseSpec c = spec(2, 300, 257, 64, 20, 6, 0.1, Inactive::KeysAndQueries);
  const CaseData data = makeCase(c);
  std::vector<float> u, v;
  for (int h = 0; h < c.batch; ++h) {
    const PlanResult<double> r = referenceHead<double>(data, h, c.T, c.eps);
    for (int i = 0; i < c.nq; ++i) u.push_back(float(r.u(i)));
    for (int j = 0; j < c.nk; ++j) v.push_back(float(r.v(j)));
  }
  CudaOptions o = checked({});
  o.plan = true;
  const CudaAttentionResult r = planFromDualsCuda(data.problem(), u, v, c.eps, o);
  EXPECT_TRUE(planFromDualsMatchesCpu(data, u, v, c.eps, r, "plan_from_duals_" + c.name()));
  EXPECT_TRUE(r.errorHistory.empty());
}

TEST(CudaKernels, CancelThrowsAndTheNextRunWorks) {
  TL_REQUIRE_GPU();
  const CaseSpec c = spec(2, 1000, 1000, 64, 64, 20, 1.0, Inactive::Keys);
  const CaseData data = makeCase(c);
  CudaOptions o;
  int polls = 0;
  o.canceled = [&] { return ++polls == 3; };
  EXPECT_THROW(sinkhornCuda(data.problem(), {c.T, c.eps}, o), Canceled);
  EXPECT_EQ(polls, 3);
  const double freeAfter = deviceInfo(0).freeBytes;
  EXPECT_GT(freeAfter, 0.5 * gpu().freeBytes) << "device memory was not released";
  const CudaAttentionResult again = sinkhornCuda(data.problem(), {3, c.eps}, checked(fullOptions(c)));
  CaseSpec c3 = c;
  c3.T = 3;
  EXPECT_TRUE(matchesCpu(makeCase(c3), again, checked(fullOptions(c)), 3, c.eps, "after_cancel"));
}

TEST(CudaKernels, OutOfMemoryIsReportedBeforeAllocating) {
  TL_REQUIRE_GPU();
  // 32 heads × 65536 × 65536 dense plan = 512 GiB; inputs with d = 1 are small.
  const int batch = 32, n = 65536;
  std::vector<float> q(size_t(batch) * n, 0.5f);
  AttentionProblem p;
  p.batch = batch;
  p.nq = p.nk = n;
  p.d = 1;
  p.q = p.k = q.data();
  p.logMu.assign(n, -std::log(float(n)));
  p.logNu = p.logMu;
  p.scale = float(n);
  CudaOptions o;
  o.plan = true;
  EXPECT_TRUE(tl::test::throwsWith<CudaError>([&] { sinkhornCuda(p, {10, 1.0}, o); },
                                              {"CUDA out of memory", "Sinkhorn plan path", "512.0 GiB",
                                               "batch 32 × 65536 × 65536", "fused output path"}));
}

TEST(CudaKernels, NonFiniteInputsAreFoundOnTheDevice) {
  TL_REQUIRE_GPU();
  CaseData data = makeCase(spec(2, 70, 131, 24, 9, 3, 0.2, Inactive::None));
  data.q[1 * 70 * 24 + 5 * 24 + 2] = std::nanf("");
  EXPECT_TRUE(tl::test::throwsWith<InvalidArgument>([&] { softmaxCuda(data.problem()); },
                                                    {"q contains a non-finite value", "head 1, row 5, column 2"}));
}

// Request errors are found before any device work, so these run without a GPU too.
TEST(CudaKernels, InvalidRequestsAreRefusedWithoutTouchingTheGpu) {
  const CaseData data = makeCase(spec(1, 7, 7, 16, 5, 3, 1.0, Inactive::None));
  EXPECT_TRUE(tl::test::throwsWith<InvalidArgument>([&] { sinkhornCuda(data.problem(), {0, 1.0}); }, {"T = 0"}));
  AttentionProblem bad = data.problem();
  bad.logNu.assign(7, -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(tl::test::throwsWith<InvalidArgument>([&] { softmaxCuda(bad); }, {"every key is inactive"}));
}

TEST(CudaKernels, BenchmarksRunOnASmallShape) {
  TL_REQUIRE_GPU();
  BenchShape shape;
  shape.H = 2;
  shape.n = 300;
  shape.T = 3;
  const BenchTiming s = benchSinkhorn(shape, 1, 3), f = benchSoftmax(shape, 1, 3);
  EXPECT_GT(s.medianMs, 0);
  EXPECT_GE(s.medianMs, s.minMs);
  EXPECT_GT(f.medianMs, 0);
  shape.tf32 = true;
  const BenchTiming st = benchSinkhorn(shape, 1, 3), ft = benchSoftmax(shape, 1, 3);
  EXPECT_GT(st.medianMs, 0);
  EXPECT_GT(ft.medianMs, 0);
  const ExpThroughput e = measureExpThroughput(0);
  EXPECT_GT(e.accuratePerSecond, 0);
  EXPECT_GT(e.fastPerSecond, 0);
  std::printf("TLCUDA bench-smoke sinkhorn_ms=%.3f softmax_ms=%.3f sinkhorn_tf32_ms=%.3f softmax_tf32_ms=%.3f"
              " expf_per_s=%.3g fast_expf_per_s=%.3g\n",
              s.medianMs, f.medianMs, st.medianMs, ft.medianMs, e.accuratePerSecond, e.fastPerSecond);
}

}  // namespace
}  // namespace tl::cuda::test
