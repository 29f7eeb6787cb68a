// The CUDA kernels and their host orchestration (core/cuda/dense_run.h) run thread by thread on the CPU
// (sim_device.h) against the CPU reference: the same comparisons as the GPU kernel tests, on a case list that
// covers every value of every axis (sizes, rectangles, d, T, eps, inactive tokens, element types), plus
// the checks only a simulation can make (thread-order independence, NaN-initialised memory).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda/dense_run.h"
#include "cuda/score_tile.h"
#include "cuda/sinkhorn_cuda.h"
#include "cuda_test_support.h"
#include "ops/sinkhorn.h"
#include "ops/softmax.h"
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
// The score tile alone: dot products of unaligned, partly out-of-range tiles against a direct sum.

struct ScoreTileProbe {
  using Tile = ScoreTile<64, 64, 4, 4, 16>;
  static constexpr int kThreads = Tile::kThreads;
  struct Params {
    const float *aT, *bT;
    long long ldA, ldB, rowA0, limitA, rowB0, limitB;
    int dPad;
    bool aligned;
    float* out;  // [64][64]
  };
  struct Shared {
    Tile::Operands operands;
  };
  struct Regs {
    float acc[4][4];
  };
  template <class Block>
  static void run(Block& block, const Params& p, BlockIndex, Shared& sh) {
    typename Block::template Local<Regs> regs(block);
    block.forEach([&](int tid) { Tile::zero(regs[tid].acc); });
    for (int k0 = 0; k0 < p.dPad; k0 += 16) {
      block.forEach([&](int tid) {
        if (p.aligned)
          Tile::loadAligned(tid, sh.operands, p.aT, p.ldA, p.rowA0, p.bT, p.ldB, p.rowB0, k0);
        else
          Tile::loadGuarded(tid, sh.operands, p.aT, p.ldA, p.rowA0, p.limitA, p.bT, p.ldB, p.rowB0, p.limitB, k0);
      });
      block.sync();
      block.forEach([&](int tid) { Tile::accumulate(tid, sh.operands, regs[tid].acc); });
      block.sync();
    }
    block.forEach([&](int tid) {
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) p.out[Tile::row(tid, r) * 64 + Tile::col(tid, c)] = regs[tid].acc[r][c];
    });
  }
};

TEST(SimKernels, ScoreTileComputesDotProductsOfAnyTile) {
  const int dPad = 32, ld = 256;  // k-major operands [dPad][ld]
  SimDevice dev;
  auto a = dev.alloc<float>(size_t(dPad) * ld, ""), b = dev.alloc<float>(size_t(dPad) * ld, "");
  auto out = dev.alloc<float>(64 * 64, "");
  const MatD av = tl::test::gaussian(dPad, ld, 1), bv = tl::test::gaussian(dPad, ld, 2);
  for (int k = 0; k < dPad; ++k)
    for (int i = 0; i < ld; ++i) {
      a.data()[k * ld + i] = float(av(k, i));
      b.data()[k * ld + i] = float(bv(k, i));
    }
  struct Case {
    long long rowA0, limitA, rowB0, limitB;
    bool aligned;
  };
  for (Case c : {Case{64, 256, 128, 256, true}, Case{37, 80, 5, 256, false}, Case{200, 230, 190, 256, false}}) {
    SCOPED_TRACE(::testing::Message() << "rows " << c.rowA0 << " cols " << c.rowB0 << " aligned " << c.aligned);
    dev.launch<ScoreTileProbe>("probe", Grid{}, {a.data(), b.data(), ld, ld, c.rowA0, c.limitA, c.rowB0, c.limitB, dPad,
                                                  c.aligned, out.data()});
    for (int r = 0; r < 64; ++r)
      for (int col = 0; col < 64; ++col) {
        double expected = 0;
        const long long i = c.rowA0 + r, j = c.rowB0 + col;
        if (i < c.limitA && j < c.limitB)
          for (int k = 0; k < dPad; ++k) expected += double(float(av(k, i))) * double(float(bv(k, j)));
        ASSERT_NEAR(out.data()[r * 64 + col], expected, 1e-5) << "r=" << r << " c=" << col;
      }
  }
  // A misaligned 16-byte load is an error here, as it would be a fault on the device.
  EXPECT_THROW(dev.launch<ScoreTileProbe>("probe", Grid{}, {a.data(), b.data(), ld, ld, 3, 256, 0, 256, dPad, true,
                                                            out.data()}),
               std::logic_error);
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
  EXPECT_TRUE(tl::test::matricesIdentical(cpu.plan, harness.plan));
  EXPECT_TRUE(tl::test::matricesIdentical(cpu.u, harness.u));
  EXPECT_TRUE(tl::test::matricesIdentical(*cpu.output, *harness.output));
  // Softmax under keep-queries is the T = 1, eps = 1 run of the same harness.
  SoftmaxParams sp;
  sp.maskMode = MaskMode::KeepQueries;
  EXPECT_TRUE(tl::test::matricesIdentical(softmaxAttention(in, sp).plan, referenceHead<double>(data, 0, 1, 1.0).plan));
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
  const CudaOptions o = fullOptions(data.spec, 9, 10);
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

TEST(SimKernels, FullResolutionTilesAreThePlanBitForBit) {
  const CaseSpec c = mediumCase();
  const CaseData data = makeCase(c);
  CudaOptions o = fullOptions(c, c.nq, c.nk);
  o.plan = true;
  const CudaAttentionResult r = simRun(data.problem(), sinkhornRunSpec(c.T, c.eps), o);
  EXPECT_EQ(r.tiles.rows, c.nq);
  EXPECT_EQ(r.tiles.cols, c.nk);
  EXPECT_EQ(r.tiles.mean, r.plan);
  EXPECT_EQ(r.tiles.max, r.plan);
  ASSERT_EQ(r.tiles.rowStarts.size(), size_t(c.nq + 1));
  EXPECT_EQ(r.tiles.rowStarts.back(), c.nq);
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
