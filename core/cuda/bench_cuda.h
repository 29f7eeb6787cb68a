#pragma once
// Benchmarks of the CUDA backend (for `tlens bench --device cuda`, app/cli/gpu_bench.cpp): the exp throughput
// that bounds every log-domain kernel, and the fused paths timed with CUDA events on device-resident
// inputs (upload and download excluded): warm-up runs, then the median of the timed repeats.
#include "cuda/esp_cuda.h"

namespace tl::cuda {

// Exponentials per second of a kernel that does nothing but chains of exp on registers over the whole GPU:
// `accurate` is expf (what the kernels use), `fast` the hardware approximation __expf.
struct ExpThroughput {
  double accuratePerSecond = 0, fastPerSecond = 0;
};
ExpThroughput measureExpThroughput(int device = 0);

// A benchmark problem: B·H heads of n queries and n keys of head dimension d (v: d columns), random inputs,
// uniform marginals, scale n. Sinkhorn runs the fused output path with budget T and eps; softmax its
// one-pass output. `errors` adds the marginal errors (one more half-step); `tf32` runs the TF32 tensor-core
// kernels (CudaOptions::tf32).
struct BenchShape {
  int B = 1, H = 32, n = 4096, d = 64, T = 10;
  double eps = 1.0;
  bool errors = false;
  bool tf32 = false;
};

struct BenchTiming {
  double medianMs = 0, minMs = 0;
  int repeats = 0;  // timed runs: as requested, but no more than fit in about 8 s after the warm-up's time
};

// Throw CudaError when there is no device (callers check deviceInfo first).
BenchTiming benchSinkhorn(const BenchShape& shape, int warmup = 1, int repeats = 5, int device = 0);
BenchTiming benchSoftmax(const BenchShape& shape, int warmup = 1, int repeats = 5, int device = 0);
// LOT's device path (ops/lot/lot_device.h) with r pivots: its two rectangular Sinkhorn problems (n × r and
// r × n, budget T each) with their outputs; the r × d_v rescaling between them (host side) is not timed.
BenchTiming benchLot(const BenchShape& shape, int r, int warmup = 1, int repeats = 5, int device = 0);
// Banded Sinkhorn's fused path (banded_cuda.h) on the band |i − j| ≤ W: the centred base and raw tail
// (shape.T is ignored), the output and the two final-sum passes. Float32 only (no TF32 band kernels).
BenchTiming benchBanded(const BenchShape& shape, long long W, int baseSteps, int tailSteps, int warmup = 1,
                        int repeats = 5, int device = 0);

// Hard ESP's device path (esp_cuda.h) on B·H heads of n queries and n keys (v: d columns), random inputs:
// projections, the segmented sort, tie groups, block masses, costs, the weights (`options.weights` on the
// host, between two launches) and the gathered output; downloading the sorted orders for the result's plan is
// not timed. `problem` brings the directions, the rank coupling, p and the tie rule; its sizes and arrays are
// set here. shape.T, eps and tf32 are ignored.
BenchTiming benchEsp(const BenchShape& shape, EspCudaProblem problem, const EspCudaOptions& options, int warmup = 1,
                     int repeats = 5, int device = 0);

}  // namespace tl::cuda
