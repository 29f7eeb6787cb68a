// The CUDA kernels and their host orchestration (core/cuda/dense_run.h) run thread by thread on the CPU
// (sim_device.h) against the CPU reference: the same comparisons as the GPU kernel tests, on a case list that
// covers every value of every axis (sizes, rectangles, d, T, eps, inactive tokens, element types), plus
// the checks only a simulation can make (thread-order independence, NaN-initialised memory). The TF32 kernels
// run here too, their tensor-core instructions emulated lane by lane (tf32_tile.h), so their fragment layout,
// indexing and rounding points are checked without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda/dense_run.h"
#include "cuda/kernel_sets.h"
#include "cuda/score_tile.h"
#include "cuda/sinkhorn_cuda.h"
#include "cuda_test_support.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/softmax/softmax.h"
#include "sim_device.h"

namespace tl::cuda::test {
namespace {

const ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new RatioSummary);

CudaAttentionResult simRun(const AttentionProblem& p, const DenseRunSpec& spec, const CudaOptions& o,
                           bool reverse = false) {
  validateProblem(p, o, spec.family);
  SimDevice dev;
  dev.reverseThreads = reverse;
  return runDense(dev, p, spec, o);
}

// ---------------------------------------------------------------------------------------------------------
// The score tiles alone: dot products of unaligned, partly out-of-range tiles against a direct sum, for the
// FP32 tile and the TF32 tiles (whose mma instructions are emulated lane by lane, tf32_tile.h).

template <class Tile>
struct ScoreTileProbe {
  static constexpr int kThreads = Tile::kThreads;
  struct Params {
    const float *aT, *bT;
    long long ldA, ldB, rowA0, limitA, rowB0, limitB;
    int dPad;
    bool aligned;
    float* out;  // [BM][BN]
  };
  struct Shared {
    typename Tile::Operands operands;
  };
  struct Regs {
    float acc[Tile::TM][Tile::TN];
  };
  template <class Block>
  static void run(Block& block, const Params& p, BlockIndex, Shared& sh) {
    typename Block::template Local<Regs> regs(block);
    Tile::product(block, sh.operands, p.dPad, [&](int tid) -> auto& { return regs[tid].acc; },
                  [&](int tid, int k0, typename Tile::Stage& st) {
                    if (p.aligned)
                      Tile::loadAligned(tid, st, p.aT, p.ldA, p.rowA0, p.bT, p.ldB, p.rowB0, k0);
                    else
                      Tile::loadGuarded(tid, st, p.aT, p.ldA, p.rowA0, p.limitA, p.bT, p.ldB, p.rowB0, p.limitB, k0);
                  });
    block.forEach([&](int tid) {
      for (int r = 0; r < Tile::TM; ++r)
        for (int c = 0; c < Tile::TN; ++c)
          p.out[Tile::row(tid, r) * Tile::BN + Tile::col(tid, c)] = regs[tid].acc[r][c];
    });
  }
};

// k-major operands [dPad][ld] of Gaussian values (rounded to TF32 for the TF32 tiles, as the conversion
// kernels do), and the probe's output for one placement of the tile.
struct ProbeData {
  static constexpr int dPad = 32, ld = 256;
  SimDevice dev;
  SimBuffer<float> a = dev.alloc<float>(size_t(dPad) * ld, ""), b = dev.alloc<float>(size_t(dPad) * ld, "");
  explicit ProbeData(bool tf32) {
    const MatD av = tl::test::gaussian(dPad, ld, 1), bv = tl::test::gaussian(dPad, ld, 2);
    for (int k = 0; k < dPad; ++k)
      for (int i = 0; i < ld; ++i) {
        a.data()[k * ld + i] = tf32 ? toTf32(float(av(k, i))) : float(av(k, i));
        b.data()[k * ld + i] = tf32 ? toTf32(float(bv(k, i))) : float(bv(k, i));
      }
  }
  template <class Tile>
  std::vector<float> run(long long rowA0, long long limitA, long long rowB0, long long limitB, bool aligned,
                         bool swap = false) {
    SimBuffer<float> out = dev.alloc<float>(size_t(Tile::BM) * Tile::BN, "");
    const float* x = swap ? b.data() : a.data();
    const float* y = swap ? a.data() : b.data();
    dev.launch<ScoreTileProbe<Tile>>("probe", Grid{},
                                     {x, y, ld, ld, rowA0, limitA, rowB0, limitB, dPad, aligned, out.data()});
    return std::vector<float>(out.data(), out.data() + out.size());
  }
  double expected(long long i, long long j) const {
    double sum = 0;
    for (int k = 0; k < dPad; ++k) sum += double(a.data()[k * ld + i]) * double(b.data()[k * ld + j]);
    return sum;
  }
};

template <class Tile>
void checkProbe(bool tf32) {
  ProbeData data(tf32);
  struct Case {
    long long rowA0, limitA, rowB0, limitB;
    bool aligned;
  };
  const int BM = Tile::BM, BN = Tile::BN;
  for (Case c : {Case{64, 256, 128, 256, true}, Case{128, 256, 0, 256, true}, Case{37, 80, 5, 256, false},
                 Case{256 - BM + 10, 230, 256 - BN + 3, 256, false}}) {
    SCOPED_TRACE(::testing::Message() << "rows " << c.rowA0 << " cols " << c.rowB0 << " aligned " << c.aligned);
    const std::vector<float> out = data.run<Tile>(c.rowA0, c.limitA, c.rowB0, c.limitB, c.aligned);
    for (int r = 0; r < BM; ++r)
      for (int col = 0; col < BN; ++col) {
        const long long i = c.rowA0 + r, j = c.rowB0 + col;
        const double expected = i < c.limitA && j < c.limitB ? data.expected(i, j) : 0.0;
        ASSERT_NEAR(out[size_t(r) * BN + col], expected, 1e-5) << "r=" << r << " c=" << col;
      }
  }
}

TEST(SimKernels, ScoreTileComputesDotProductsOfAnyTile) {
  checkProbe<ScoreTile<64, 64, 4, 4, 16>>(false);
  // A misaligned 16-byte load is an error here, as it would be a fault on the device.
  ProbeData data(false);
  using Fp32Tile = ScoreTile<64, 64, 4, 4, 16>;
  EXPECT_THROW(data.run<Fp32Tile>(3, 256, 0, 256, true), std::logic_error);
}

TEST(SimKernels, Tf32ScoreTilesComputeDotProductsOfAnyTile) {
  checkProbe<Tf32Kernels::Plan::Tile>(true);  // 64 × 64, 2 × 4 warps of 2 × 2 fragments
  checkProbe<Tf32Kernels::Lse::Tile>(true);   // 128 × 128, 2 × 4 warps of 4 × 4 fragments
  ProbeData data(true);
  using Tile = Tf32Kernels::Plan::Tile;
  EXPECT_THROW(data.run<Tile>(3, 256, 0, 256, true), std::logic_error);  // misaligned copy
}

// The emulated mma reads only TF32 values: an operand that was not rounded where it was produced is an error.
TEST(SimKernels, Tf32TileRefusesOperandsThatAreNotTf32) {
  ProbeData data(false);
  EXPECT_TRUE(tl::test::throwsWith<std::logic_error>([&] { data.run<Tf32Kernels::Plan::Tile>(0, 256, 0, 256, true); },
                                                     {"not rounded to TF32"}));
}

// Swapping the operands transposes the tile bit for bit in both tiles (row and column half-steps see the same
// scores). In the TF32 emulation this holds because every output sums the same exact products in the same
// k-steps; on the GPU it is checked through the plan kernel (kernel_test.cpp).
TEST(SimKernels, SwappingTheOperandsTransposesTheTileBitForBit) {
  for (bool tf32 : {false, true}) {
    ProbeData data(tf32);
    const auto run = [&](long long rows0, long long cols0, bool swap) {
      return tf32 ? data.run<Tf32Kernels::Plan::Tile>(rows0, 256, cols0, 256, true, swap)
                  : data.run<ScoreTile<64, 64, 4, 4, 16>>(rows0, 256, cols0, 256, true, swap);
    };
    const std::vector<float> ab = run(64, 128, false);      // ab[r][c] = a_{64+r} · b_{128+c}
    const std::vector<float> swapped = run(128, 64, true);  // swapped[r][c] = b_{128+r} · a_{64+c}
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c)
        ASSERT_EQ(ab[size_t(r) * 64 + c], swapped[size_t(c) * 64 + r]) << "tf32 " << tf32 << " r=" << r << " c=" << c;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The case list: every value of every axis at least once, the full product only where it is cheap.

std::vector<CaseSpec> simCases() {
  using I = Inactive;
  const ElementType f32 = ElementType::F32, f16 = ElementType::F16, bf16 = ElementType::BF16;
  struct Row {
    int batch, nq, nk, d, dv, T;
    double eps;
    Inactive inactive;
    ElementType type;
  };
  const Row rows[] = {
      {2, 1, 1, 16, 5, 3, 1.0, I::None, f32},
      {2, 2, 2, 1, 3, 2, 0.05, I::Keys, f32},
      {2, 7, 7, 16, 5, 1, 1.0, I::KeysAndQueries, f32},
      {2, 7, 33, 64, 8, 10, 0.05, I::KeysAndQueries, f32},
      {2, 33, 7, 128, 5, 3, 1.0, I::Keys, f32},
      {1, 64, 64, 64, 64, 50, 0.05, I::None, f32},
      {2, 33, 33, 16, 70, 2, 1.0, I::KeysAndQueries, f16},  // two output column chunks
      {2, 64, 257, 16, 5, 3, 0.05, I::Keys, bf16},
      {2, 257, 64, 1, 4, 10, 1.0, I::KeysAndQueries, f32},
      {1, 1000, 33, 16, 5, 2, 0.05, I::Keys, f32},
      {1, 257, 257, 128, 5, 1, 1.0, I::None, f32},
      {1, 33, 1000, 64, 5, 3, 1.0, I::KeysAndQueries, f32},
      {3, 7, 7, 16, 0, 4, 0.05, I::Keys, f32},  // no v: duals only
  };
  std::vector<CaseSpec> cases;
  uint64_t seed = 100;
  for (const Row& r : rows) {
    CaseSpec c;
    c.batch = r.batch;
    c.nq = r.nq;
    c.nk = r.nk;
    c.d = r.d;
    c.dv = r.dv;
    c.T = r.T;
    c.eps = r.eps;
    c.inactive = r.inactive;
    c.type = r.type;
    c.seed = seed++;
    cases.push_back(c);
  }
  return cases;
}

class SimSinkhorn : public ::testing::TestWithParam<CaseSpec> {};

TEST_P(SimSinkhorn, MatchesTheCpuLoop) {
  const CaseSpec c = GetParam();
  const CaseData data = makeCase(c);
  const CudaOptions o = fullOptions(c, 5, 3);
  const CudaAttentionResult got = simRun(data.problem(), sinkhornRunSpec(c.T, c.eps), o);
  EXPECT_EQ(got.steps, c.T);
  EXPECT_EQ(got.errorHistory.size(), size_t(c.batch * c.T));
  EXPECT_TRUE(matchesCpu(data, got, o, c.T, c.eps, "sim_sinkhorn_" + c.name()));
}

TEST_P(SimSinkhorn, SoftmaxMatchesTheCpuSoftmax) {
  CaseSpec c = GetParam();
  c.T = 1;
  c.eps = 1.0;
  const CaseData data = makeCase(c);
  const CudaOptions o = fullOptions(c, 4, 1024);
  const CudaAttentionResult got = simRun(data.problem(), softmaxRunSpec(), o);
  EXPECT_TRUE(matchesCpu(data, got, o, 1, 1.0, "sim_softmax_" + c.name()));
}

// The TF32 kernels (tensor-core tiles emulated lane by lane) on the same cases: within the TF32 bound of the
// float64 loop, and within kRatio times the float32 error of the loop run on the TF32-rounded inputs
// (cuda_test_support.h matchesCpuTf32).
TEST_P(SimSinkhorn, Tf32MatchesTheCpuLoop) {
  const CaseSpec c = GetParam();
  const CaseData data = makeCase(c);
  CudaOptions o = fullOptions(c, 5, 3);
  o.tf32 = true;
  const CudaAttentionResult got = simRun(data.problem(), sinkhornRunSpec(c.T, c.eps), o);
  EXPECT_TRUE(matchesCpuTf32(data, got, o, c.T, c.eps, "sim_tf32_sinkhorn_" + c.name(), kRatio));
}

TEST_P(SimSinkhorn, Tf32SoftmaxMatchesTheCpuSoftmax) {
  CaseSpec c = GetParam();
  c.T = 1;
  c.eps = 1.0;
  const CaseData data = makeCase(c);
  CudaOptions o = fullOptions(c, 4, 1024);
  o.tf32 = true;
  const CudaAttentionResult got = simRun(data.problem(), softmaxRunSpec(), o);
  EXPECT_TRUE(matchesCpuTf32(data, got, o, 1, 1.0, "sim_tf32_softmax_" + c.name(), kRatio));
}

INSTANTIATE_TEST_SUITE_P(Cases, SimSinkhorn, ::testing::ValuesIn(simCases()),
                         [](const ::testing::TestParamInfo<CaseSpec>& info) { return info.param.name(); });

// ---------------------------------------------------------------------------------------------------------
// The reference used above is the CPU operator itself under its keep-queries convention.

TEST(SimKernels, ReferenceHarnessIsTheCpuOperator) {
  CaseSpec c;
  c.batch = 1;
  c.nq = c.nk = 17;
  c.d = 8;
  c.dv = 3;
  c.T = 5;
  c.eps = 0.3;
  c.inactive = Inactive::Keys;
  const CaseData data = makeCase(c);
  AttentionInput<double> in;
  in.Q = headMatrix<double>(data.q, 0, c.nq, c.d);
  in.K = headMatrix<double>(data.k, 0, c.nk, c.d);
  in.V = headMatrix<double>(data.v, 0, c.nk, c.dv);
  Mask mask(c.nk);
  for (int j = 0; j < c.nk; ++j) mask(j) = !keyInactive(c, j);
  in.mask = mask;
  SinkhornParams params;
  params.T = c.T;
  params.eps = c.eps;
  params.maskMode = MaskMode::KeepQueries;
  const PlanResult<double> cpu = sinkhornAttention(in, params);
  const PlanResult<double> harness = referenceHead<double>(data, 0, c.T, c.eps);
  EXPECT_TRUE(tl::test::matricesIdentical(cpu.plan.dense(), harness.plan.dense()));
  EXPECT_TRUE(tl::test::matricesIdentical(cpu.u, harness.u));
  EXPECT_TRUE(tl::test::matricesIdentical(*cpu.output, *harness.output));
  // Softmax under keep-queries is the T = 1, eps = 1 run of the same harness, within rounding: the CPU computes it
  // in a fused pass of its own (ops/softmax/row_softmax.h).
  SoftmaxParams sp;
  sp.maskMode = MaskMode::KeepQueries;
  EXPECT_TRUE(tl::test::matricesNear(softmaxAttention(in, sp).plan.dense(), referenceHead<double>(data, 0, 1, 1.0).plan.dense(),
                                     1e-14));
}

// ---------------------------------------------------------------------------------------------------------
// Properties of the device path itself.

CaseSpec mediumCase() {
  CaseSpec c;
  c.batch = 2;
  c.nq = 70;
  c.nk = 131;
  c.d = 24;
  c.dv = 9;
  c.T = 4;
  c.eps = 0.2;
  c.inactive = Inactive::KeysAndQueries;
  c.seed = 77;
  return c;
}

TEST(SimKernels, ResultsDoNotDependOnThreadOrder) {
  const CaseData data = makeCase(mediumCase());
  CudaOptions o = fullOptions(data.spec, 9, 10);
  for (bool tf32 : {false, true}) {
    o.tf32 = tf32;
    for (const DenseRunSpec& spec : {sinkhornRunSpec(4, 0.2), softmaxRunSpec()}) {
      const CudaAttentionResult fwd = simRun(data.problem(), spec, o, false);
      const CudaAttentionResult bwd = simRun(data.problem(), spec, o, true);
      EXPECT_EQ(fwd.u, bwd.u);
      EXPECT_EQ(fwd.v, bwd.v);
      EXPECT_EQ(fwd.output, bwd.output);
      EXPECT_EQ(fwd.plan, bwd.plan);
      EXPECT_EQ(fwd.tiles.mean, bwd.tiles.mean);
      EXPECT_EQ(fwd.tiles.max, bwd.tiles.max);
      EXPECT_EQ(fwd.uHistory, bwd.uHistory);
      ASSERT_EQ(fwd.errorHistory.size(), bwd.errorHistory.size());
      for (size_t s = 0; s < fwd.errorHistory.size(); ++s) {
        EXPECT_EQ(fwd.errorHistory[s].rowMax, bwd.errorHistory[s].rowMax);
        EXPECT_EQ(fwd.errorHistory[s].colMean, bwd.errorHistory[s].colMean);
      }
    }
  }
}

TEST(SimKernels, FullResolutionTilesAreThePlanBitForBit) {
  const CaseSpec c = mediumCase();
  const CaseData data = makeCase(c);
  CudaOptions o = fullOptions(c, c.nq, c.nk);
  o.plan = true;
  for (bool tf32 : {false, true}) {
    o.tf32 = tf32;
    const CudaAttentionResult r = simRun(data.problem(), sinkhornRunSpec(c.T, c.eps), o);
    EXPECT_EQ(r.tiles.rows, c.nq);
    EXPECT_EQ(r.tiles.cols, c.nk);
    EXPECT_EQ(r.tiles.mean, r.plan);
    EXPECT_EQ(r.tiles.max, r.plan);
    ASSERT_EQ(r.tiles.rowStarts.size(), size_t(c.nq + 1));
    EXPECT_EQ(r.tiles.rowStarts.back(), c.nq);
  }
}

TEST(SimKernels, TilesCoverOddBlockBoundaries) {
  CaseSpec c = mediumCase();
  c.nq = 1000;
  c.nk = 37;
  c.batch = 1;
  c.T = 2;
  const CaseData data = makeCase(c);
  const CudaOptions o = fullOptions(c, 7, 5);  // 1000 → 7 blocks of 142 or 143, 37 → 5 of 7 or 8
  const CudaAttentionResult r = simRun(data.problem(), sinkhornRunSpec(c.T, c.eps), o);
  EXPECT_EQ(r.tiles.rowStarts, (std::vector<long long>{0, 142, 285, 428, 571, 714, 857, 1000}));
  EXPECT_EQ(r.tiles.colStarts, (std::vector<long long>{0, 7, 14, 22, 29, 37}));
  EXPECT_TRUE(matchesCpu(data, r, o, c.T, c.eps, "sim_tiles_" + c.name()));
}

TEST(SimKernels, FlashSoftmaxOutputEqualsTheTwoPassOutput) {
  CaseSpec c = mediumCase();
  c.dv = 100;  // two output column chunks
  const CaseData data = makeCase(c);
  CudaOptions o;
  const CudaAttentionResult flash = simRun(data.problem(), softmaxRunSpec(), o);
  const CudaAttentionResult twoPass = simRun(data.problem(), sinkhornRunSpec(1, 1.0), o);
  ASSERT_EQ(flash.output.size(), twoPass.output.size());
  for (size_t i = 0; i < flash.output.size(); ++i) ASSERT_NEAR(flash.output[i], twoPass.output[i], 2e-6) << i;
  for (size_t i = 0; i < flash.u.size(); ++i) {
    if (std::isinf(twoPass.u[i])) {
      EXPECT_EQ(flash.u[i], twoPass.u[i]);
    } else {
      EXPECT_NEAR(flash.u[i], twoPass.u[i], 2e-6 * std::max(1.f, std::abs(twoPass.u[i])));
    }
  }
  // Softmax duals: v = 0 on active keys, −inf on inactive ones.
  for (int j = 0; j < c.nk; ++j) EXPECT_EQ(flash.v[size_t(j)], keyInactive(c, j) ? -INFINITY : 0.f);
}

// The TF32 one-pass output against the TF32 two-pass output: the same TF32 scores, P rounded to TF32 at
// different scales (exp(x − m) there, the plan entry here), so they agree to a few TF32 units of |O|.
TEST(SimKernels, Tf32FlashSoftmaxOutputIsCloseToTheTwoPassOutput) {
  CaseSpec c = mediumCase();
  c.dv = 100;
  const CaseData data = makeCase(c);
  CudaOptions o;
  o.tf32 = true;
  const CudaAttentionResult flash = simRun(data.problem(), softmaxRunSpec(), o);
  const CudaAttentionResult twoPass = simRun(data.problem(), sinkhornRunSpec(1, 1.0), o);
  ASSERT_EQ(flash.output.size(), twoPass.output.size());
  double magnitude = 0;
  for (float x : twoPass.output) magnitude = std::max(magnitude, double(std::abs(x)));
  for (size_t i = 0; i < flash.output.size(); ++i)
    ASSERT_NEAR(flash.output[i], twoPass.output[i], 4 * kTf32Unit * magnitude) << i;
  EXPECT_EQ(flash.u.size(), twoPass.u.size());
}

// The GPU test's check (kernel_test.cpp SwappingQueriesAndKeysTransposesTheScoresBitForBit) through the whole
// plan path, on both tile products.
TEST(SimKernels, SwappingQueriesAndKeysTransposesThePlanBitForBit) {
  CaseSpec c = mediumCase();
  c.batch = 1;
  c.dv = 0;
  c.inactive = Inactive::None;
  const CaseData data = makeCase(c);
  AttentionProblem qk = data.problem(), kq = data.problem();
  std::swap(kq.q, kq.k);
  std::swap(kq.nq, kq.nk);
  std::swap(kq.logMu, kq.logNu);
  for (bool tf32 : {false, true}) {
    CudaOptions o;
    o.plan = true;
    o.errors = false;
    o.tf32 = tf32;
    const std::vector<float> zq(size_t(c.nq), 0.f), zk(size_t(c.nk), 0.f);
    const CudaAttentionResult a = simRun(qk, dualsRunSpec(zq, zk, c.eps), o);
    const CudaAttentionResult b = simRun(kq, dualsRunSpec(zk, zq, c.eps), o);
    for (int i = 0; i < c.nq; ++i)
      for (int j = 0; j < c.nk; ++j)
        ASSERT_EQ(a.plan[size_t(i) * c.nk + j], b.plan[size_t(j) * c.nq + i]) << "tf32 " << tf32;
  }
}

TEST(SimKernels, PlanFromGivenDualsReproducesThePlan) {
  const CaseSpec c = mediumCase();
  const CaseData data = makeCase(c);
  std::vector<float> u, v;
  for (int h = 0; h < c.batch; ++h) {
    const PlanResult<double> r = referenceHead<double>(data, h, c.T, c.eps);
    for (int i = 0; i < c.nq; ++i) u.push_back(float(r.u(i)));
    for (int j = 0; j < c.nk; ++j) v.push_back(float(r.v(j)));
  }
  CudaOptions o;
  o.plan = true;
  o.errors = false;
  const CudaAttentionResult r = simRun(data.problem(), dualsRunSpec(u, v, c.eps), o);
  EXPECT_EQ(r.steps, 0);
  EXPECT_TRUE(r.errorHistory.empty());
  EXPECT_TRUE(planFromDualsMatchesCpu(data, u, v, c.eps, r, "sim_plan_from_duals"));
}

// A loop started from given column duals continues a loop: T = 2 and then T' = 3 from its v (restarting
// with a row half-step) ends where T = 5 ends, and the history's first v row is the given start.
TEST(SimKernels, ALoopFromGivenColumnDualsContinuesTheLoop) {
  const CaseSpec c = mediumCase();
  const CaseData data = makeCase(c);
  CudaOptions o;
  o.errors = true;
  o.histories = true;
  const CudaAttentionResult whole = simRun(data.problem(), sinkhornRunSpec(5, c.eps), o);
  const CudaAttentionResult firstTwo = simRun(data.problem(), sinkhornRunSpec(2, c.eps), o);
  const SinkhornCudaParams rest{3, c.eps, firstTwo.v};
  const CudaAttentionResult continued = simRun(data.problem(), sinkhornRunSpec(rest), o);
  ASSERT_EQ(continued.v.size(), whole.v.size());
  const auto near = [](float a, float b) { return (std::isinf(a) && a == b) || std::abs(a - b) <= 1e-5f * (1 + std::abs(b)); };
  for (size_t j = 0; j < whole.v.size(); ++j) ASSERT_TRUE(near(continued.v[j], whole.v[j])) << "v " << j;
  for (size_t i = 0; i < whole.u.size(); ++i) ASSERT_TRUE(near(continued.u[i], whole.u[i])) << "u " << i;
  for (size_t j = 0; j < size_t(c.nk); ++j)  // batch item 0, step 1: v is still the start
    ASSERT_TRUE(near(continued.vHistory[j], firstTwo.v[j])) << "v history " << j;
  ASSERT_EQ(continued.errorHistory.size(), size_t(c.batch * 3));
  EXPECT_NEAR(continued.errorHistory[2].colMax, whole.errorHistory[4].colMax, 1e-5);
}

TEST(SimKernels, CancelStopsBetweenHalfSteps) {
  const CaseData data = makeCase(mediumCase());
  CudaOptions o;
  int polls = 0;
  o.canceled = [&] { return ++polls == 3; };
  SimDevice dev;
  const AttentionProblem p = data.problem();
  EXPECT_THROW(runDense(dev, p, sinkhornRunSpec(10, 1.0), o), Canceled);
  EXPECT_EQ(dev.halfSteps, 3);
  EXPECT_EQ(polls, 3);
}

TEST(SimKernels, TooLittleDeviceMemoryIsRefusedBeforeAllocating) {
  CaseSpec c = mediumCase();
  const CaseData data = makeCase(c);
  CudaOptions o;
  o.plan = true;
  SimDevice dev;
  dev.freeBytesValue = 50e3;
  const AttentionProblem p = data.problem();
  EXPECT_TRUE(tl::test::throwsWith<CudaError>([&] { runDense(dev, p, sinkhornRunSpec(3, 1.0), o); },
                                              {"CUDA out of memory", "Sinkhorn plan path", "batch 2 × 70 × 131"}));
  EXPECT_TRUE(dev.launches.empty());
}

TEST(SimKernels, A512GiBPlanIsRefusedWithItsSize) {
  // The GPU test's case (kernel_test.cpp OutOfMemoryIsReportedBeforeAllocating) on an 80 GiB device.
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
  SimDevice dev;
  dev.freeBytesValue = 80.0 * (1ull << 30);
  EXPECT_TRUE(tl::test::throwsWith<CudaError>([&] { runDense(dev, p, sinkhornRunSpec(10, 1.0), o); },
                                              {"CUDA out of memory", "Sinkhorn plan path", "512.0 GiB",
                                               "batch 32 × 65536 × 65536", "80.0 GiB free", "fused output path"}));
  EXPECT_TRUE(dev.launches.empty());
}

TEST(SimKernels, NonFiniteInputsAreFoundOnTheDeviceAndLocated) {
  CaseData data = makeCase(mediumCase());
  data.v[1 * 131 * 9 + 5 * 9 + 2] = std::numeric_limits<float>::infinity();
  SimDevice dev;
  const AttentionProblem p = data.problem();
  EXPECT_TRUE(tl::test::throwsWith<InvalidArgument>([&] { runDense(dev, p, softmaxRunSpec(), CudaOptions{}); },
                                                    {"v contains a non-finite value", "head 1, row 5, column 2"}));
}

TEST(SimKernels, KeySplitsAreUsedAndMerged) {
  // Four simulated multiprocessors: a single head of 257 × 300 tokens splits its 3 key tiles.
  CaseSpec c = mediumCase();
  c.batch = 1;
  c.nq = 257;
  c.nk = 300;
  c.d = 16;
  c.T = 3;
  const CaseData data = makeCase(c);
  SimDevice dev;
  const AttentionProblem p = data.problem();
  const DenseLayout L = denseLayout(p, sinkhornRunSpec(c.T, c.eps), CudaOptions{}, dev.limits());
  EXPECT_EQ(L.rowSplits, 3);
  EXPECT_EQ(L.colSplits, 3);
  const CudaOptions o = fullOptions(c);
  EXPECT_TRUE(matchesCpu(data, runDense(dev, p, sinkhornRunSpec(c.T, c.eps), o), o, c.T, c.eps, "sim_splits"));
}

}  // namespace
}  // namespace tl::cuda::test
