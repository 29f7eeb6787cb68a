#pragma once
// The kernels' entry points (cuda/sinkhorn.cu, cuda/softmax.cu, cuda/banded.cu, cuda/low_rank.cu, cuda/esp.cu,
// cuda/esp_soft.cu) on the simulated device (sim_device.h), as ops/device_kernels.h takes them: every family's device
// path runs on it in the CPU tests.
#include <algorithm>
#include <numeric>
#include <vector>

#include "cuda/band_run.h"
#include "cuda/dense_run.h"
#include "cuda/low_rank_run.h"
#include "cuda/esp_run.h"
#include "cuda/esp_soft_run.h"
#include "cuda/sinkhorn_cuda.h"
#include "ops/device_kernels.h"
#include "sim_device.h"

namespace tl::cuda::test {

// esp_run.h's sort on the simulated device: an exact stable host sort of each segment (the contract CUB's
// segmented radix sort keeps on the GPU: ascending, equal keys in their input order, −0 equal to +0).
inline void sortSegments(SimDevice&, const SimBuffer<float>& keysIn, SimBuffer<float>& keysOut,
                         const SimBuffer<int>& valuesIn, SimBuffer<int>& valuesOut, int segments, int length) {
  std::vector<int> at(static_cast<size_t>(length));
  for (size_t first = 0; first < size_t(segments) * size_t(length); first += size_t(length)) {
    const float* keys = keysIn.data() + first;
    std::iota(at.begin(), at.end(), 0);
    std::stable_sort(at.begin(), at.end(), [&](int a, int b) { return keys[a] < keys[b]; });
    for (size_t r = 0; r < at.size(); ++r) {
      keysOut.data()[first + r] = keys[at[r]];
      valuesOut.data()[first + r] = valuesIn.data()[first + size_t(at[r])];
    }
  }
}

inline const DenseKernels& simulatedKernels() {
  static const DenseKernels kernels{
      [](const AttentionProblem& p, const SinkhornCudaParams& s, const CudaOptions& o) {
        validateSinkhornParams(p, s);
        validateProblem(p, o, "Sinkhorn");
        SimDevice device;
        return runDense(device, p, sinkhornRunSpec(s), o);
      },
      [](const AttentionProblem& p, const CudaOptions& o) {
        validateProblem(p, o, "softmax");
        SimDevice device;
        return runDense(device, p, softmaxRunSpec(), o);
      },
      [](const AttentionProblem& p, const std::vector<float>& u, const std::vector<float>& v, double eps,
         const CudaOptions& o) {
        validateProblem(p, o, "plan from duals");
        validateDuals(p, u, v, eps);
        SimDevice device;
        return runDense(device, p, dualsRunSpec(u, v, eps), o);
      },
      [](const AttentionProblem& p, const BandedCudaParams& b, const CudaOptions& o) {
        validateBandedParams(b, o);
        validateProblem(p, o, "banded");
        SimDevice device;
        return runBanded(device, p, b, o);
      },
      [](const AttentionProblem& p, long long W, double eps) {
        validateBandedParams(BandedCudaParams{W, 0, 1, eps}, {});
        validateProblem(p, {}, "banded");
        SimDevice device;
        return runBandScores(device, p, W, eps);
      },
      [](const LowRankFactors& f, int rows, int cols) {
        validateLowRankFactors(f, rows, cols);
        SimDevice device;
        return runLowRankMaxima(device, f, rows, cols);
      },
      [](const EspCudaProblem& p, const EspCudaOptions& o) {
        validateEspProblem(p, o);
        SimDevice device;
        return runEsp(device, p, o);
      },
      [](const EspSoftProblem& p, const SliceCoefficients& coefficients, const std::function<bool()>& canceled) {
        validateEspSoftProblem(p);
        SimDevice device;
        return runEspSoft(device, p, coefficients, canceled);
      }};
  return kernels;
}

}  // namespace tl::cuda::test
