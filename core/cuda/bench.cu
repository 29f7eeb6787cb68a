#include "cuda/bench_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/band_run.h"
#include "cuda/cuda_device.cuh"
#include "cuda/dense_run.h"
#include "cuda/esp_run.h"
#include "cuda/segmented_sort.cuh"

namespace tl::cuda {

extern template class DenseRun<CudaDevice>;  // compiled in dense_run.cu
extern template class BandRun<CudaDevice>;   // compiled in banded.cu
extern template class EspRun<CudaDevice>;    // compiled in esp.cu

namespace {

constexpr int kExpChains = 8;
constexpr double kRepeatBudgetMs = 8000;

// Independent chains x ← exp(−x) (bounded in (0, 1]) so the exp unit, not latency, limits the rate.
template <bool Fast>
__global__ void expChainsKernel(float* out, int iterations) {
  float x[kExpChains];
#pragma unroll
  for (int c = 0; c < kExpChains; ++c) x[c] = 0.01f * float((threadIdx.x + c) % 97);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kExpChains; ++c) x[c] = Fast ? __expf(-x[c]) : expf(-x[c]);
  }
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kExpChains; ++c) sum += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // keeps the chains alive
}

template <bool Fast>
double expRate(CudaDevice& dev) {
  const int threads = 256, blocks = dev.limits().smCount * 8, iterations = 1 << 14;
  DeviceBuffer<float> out = dev.alloc<float>(size_t(threads) * blocks, "exp benchmark output");
  EventTimer timer;
  expChainsKernel<Fast><<<blocks, threads, 0, dev.stream()>>>(out.data(), 64);  // warm-up
  checkCuda(cudaGetLastError(), "launching the exp benchmark");
  timer.start(dev.stream());
  expChainsKernel<Fast><<<blocks, threads, 0, dev.stream()>>>(out.data(), iterations);
  checkCuda(cudaGetLastError(), "launching the exp benchmark");
  const double ms = timer.stopMs(dev.stream());
  return double(threads) * blocks * iterations * kExpChains / (ms * 1e-3);
}

// Uniform values of variance 1 from a 64-bit mix (fast enough for hundreds of millions of entries).
std::vector<float> benchValues(size_t count, uint64_t seed) {
  std::vector<float> x(count);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& v : x) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v = float((double(s >> 11) * (1.0 / 9007199254740992.0) - 0.5) * 3.4641016);  // √12 · U(−½, ½)
  }
  return x;
}

// A random problem of `batch` heads (uniform marginals) and the host arrays it points at.
struct BenchProblem {
  std::vector<float> q, k, v;
  AttentionProblem problem;

  BenchProblem(int batch, int nq, int nk, int d, int dv, uint64_t seed, float scale)
      : q(benchValues(size_t(batch) * nq * d, seed)),
        k(benchValues(size_t(batch) * nk * d, seed + 1)),
        v(benchValues(size_t(batch) * nk * dv, seed + 2)),
        problem(batchedProblem(batch, nq, nk, d, q.data(), k.data(), v.data(), dv,
                               std::vector<float>(size_t(nq), -std::log(float(nq))),
                               std::vector<float>(size_t(nk), -std::log(float(nk))), scale)) {}
};

CudaOptions benchOptions(const BenchShape& shape) {
  CudaOptions options;
  options.errors = shape.errors;
  options.tf32 = shape.tf32;
  return options;
}

// `solve` (device-resident work on dev's stream) timed with CUDA events: warm-up, then the median of the
// repeats.
template <class Solve>
BenchTiming timeSolves(CudaDevice& dev, const Solve& solve, int warmup, int repeats) {
  EventTimer timer;
  double warmupMs = 0;
  for (int w = 0; w < warmup; ++w) {
    timer.start(dev.stream());
    solve();
    warmupMs = timer.stopMs(dev.stream());
  }
  dev.finish();
  // Long runs get fewer repeats (their spread is small): at most about kRepeatBudgetMs of timed runs.
  if (warmupMs > 0) repeats = std::min<long long>(repeats, std::max(1LL, (long long)(kRepeatBudgetMs / warmupMs)));
  std::vector<double> ms;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    timer.start(dev.stream());
    solve();
    ms.push_back(timer.stopMs(dev.stream()));
  }
  dev.finish();
  std::sort(ms.begin(), ms.end());
  return BenchTiming{ms[ms.size() / 2], ms.front(), int(ms.size())};
}

BenchTiming timeRuns(const BenchShape& shape, const DenseRunSpec& spec, int warmup, int repeats, int device) {
  const BenchProblem p(shape.B * shape.H, shape.n, shape.n, shape.d, shape.d, 1, float(shape.n));
  const CudaOptions options = benchOptions(shape);
  validateProblem(p.problem, options, spec.family);
  CudaDevice dev(device, false);
  DenseRun<CudaDevice> run(dev, p.problem, spec, options);
  run.upload();
  return timeSolves(dev, [&] { run.solve(); }, warmup, repeats);
}

}  // namespace

ExpThroughput measureExpThroughput(int device) {
  CudaDevice dev(device, false);
  ExpThroughput t;
  t.accuratePerSecond = expRate<false>(dev);
  t.fastPerSecond = expRate<true>(dev);
  dev.finish();
  return t;
}

BenchTiming benchSinkhorn(const BenchShape& shape, int warmup, int repeats, int device) {
  return timeRuns(shape, sinkhornRunSpec(shape.T, shape.eps), warmup, repeats, device);
}

BenchTiming benchSoftmax(const BenchShape& shape, int warmup, int repeats, int device) {
  return timeRuns(shape, softmaxRunSpec(), warmup, repeats, device);
}

BenchTiming benchLot(const BenchShape& shape, int r, int warmup, int repeats, int device) {
  const int batch = shape.B * shape.H;
  // (2) pivots → keys with the values: P2·V; (1) queries → pivots with r × d_v values (in the product the
  // rescaled diag(1/w)·P2·V, here random ones of that shape: the work does not depend on their values).
  // Uniform pivot masses (k-means' choice), random pivot locations.
  const BenchProblem fromPivots(batch, r, shape.n, shape.d, shape.d, 10, 1.f);
  const BenchProblem toPivots(batch, shape.n, r, shape.d, shape.d, 20, 1.f);
  const CudaOptions options = benchOptions(shape);
  const DenseRunSpec spec = sinkhornRunSpec(shape.T, shape.eps);
  validateProblem(fromPivots.problem, options, spec.family);
  validateProblem(toPivots.problem, options, spec.family);
  CudaDevice dev(device, false);
  DenseRun<CudaDevice> second(dev, fromPivots.problem, spec, options), first(dev, toPivots.problem, spec, options);
  second.upload();
  first.upload();
  return timeSolves(dev, [&] { second.solve(); first.solve(); }, warmup, repeats);
}

BenchTiming benchBanded(const BenchShape& shape, long long W, int baseSteps, int tailSteps, int warmup, int repeats,
                        int device) {
  const BenchProblem p(shape.B * shape.H, shape.n, shape.n, shape.d, shape.d, 30, float(shape.n));
  CudaOptions options;
  options.errors = shape.errors;
  const BandedCudaParams params{W, baseSteps, tailSteps, shape.eps};
  validateBandedParams(params, options);
  validateProblem(p.problem, options, "banded");
  CudaDevice dev(device, false);
  BandRun<CudaDevice> run(dev, p.problem, W, shape.eps, params.budget(), options);
  run.upload(false);
  run.prepare(baseSteps);
  return timeSolves(dev, [&] { run.solve(); }, warmup, repeats);
}

BenchTiming benchEsp(const BenchShape& shape, EspCudaProblem problem, const EspCudaOptions& options, int warmup,
                     int repeats, int device) {
  const BenchProblem p(shape.B * shape.H, shape.n, shape.n, shape.d, shape.d, 40, 1.f);
  problem.batch = shape.B * shape.H;
  problem.nq = problem.nk = shape.n;
  problem.d = problem.dv = shape.d;
  problem.q = p.q.data();
  problem.k = p.k.data();
  problem.v = p.v.data();
  validateEspProblem(problem, options);
  CudaDevice dev(device, false);
  EspRun<CudaDevice> run(dev, problem, options);
  run.upload();
  return timeSolves(dev, [&] { run.solve(); }, warmup, repeats);
}

}  // namespace tl::cuda
