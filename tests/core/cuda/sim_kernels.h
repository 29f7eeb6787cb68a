#pragma once
// The kernels' entry points (cuda/sinkhorn.cu, cuda/softmax.cu, cuda/banded.cu, cuda/esp_soft.cu) on the simulated
// device (sim_device.h), as ops/device_kernels.h takes them: every family's device path runs on it in the CPU tests.
#include <vector>

#include "cuda/band_run.h"
#include "cuda/dense_run.h"
#include "cuda/esp_soft_run.h"
#include "cuda/sinkhorn_cuda.h"
#include "ops/device_kernels.h"
#include "sim_device.h"

namespace tl::cuda::test {

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
      [](const EspSoftProblem& p, const SliceCoefficients& coefficients, const std::function<bool()>& canceled) {
        validateEspSoftProblem(p);
        SimDevice device;
        return runEspSoft(device, p, coefficients, canceled);
      }};
  return kernels;
}

}  // namespace tl::cuda::test
