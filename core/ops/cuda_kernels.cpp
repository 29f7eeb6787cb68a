// The dense kernels on the GPU (TL_CUDA builds), or a clear refusal in builds without CUDA.
#include "ops/device_kernels.h"

#ifdef TL_HAVE_CUDA
#include "cuda/esp_cuda.h"
#include "cuda/softmax_cuda.h"
#else
#include "common/errors.h"
#endif

namespace tl {

#ifdef TL_HAVE_CUDA
const DenseKernels& cudaDenseKernels() {
  static const DenseKernels kernels{cuda::sinkhornCuda, cuda::softmaxCuda, cuda::planFromDualsCuda,
                                    cuda::bandedCuda, cuda::bandScoresCuda, cuda::lowRankMaximaCuda,
                                    cuda::espCuda, cuda::espSoftCuda};
  return kernels;
}
#else
namespace {
[[noreturn]] void notBuilt() { throw ResourceError("this TransportLens was built without CUDA (TL_CUDA=OFF)"); }
}  // namespace

const DenseKernels& cudaDenseKernels() {
  static const DenseKernels kernels{
      [](const cuda::AttentionProblem&, const cuda::SinkhornCudaParams&, const cuda::CudaOptions&)
          -> cuda::CudaAttentionResult { notBuilt(); },
      [](const cuda::AttentionProblem&, const cuda::CudaOptions&) -> cuda::CudaAttentionResult { notBuilt(); },
      [](const cuda::AttentionProblem&, const std::vector<float>&, const std::vector<float>&, double,
         const cuda::CudaOptions&) -> cuda::CudaAttentionResult { notBuilt(); },
      [](const cuda::AttentionProblem&, const cuda::BandedCudaParams&, const cuda::CudaOptions&)
          -> cuda::BandedCudaResult { notBuilt(); },
      [](const cuda::AttentionProblem&, long long, double) -> std::vector<float> { notBuilt(); },
      [](const cuda::LowRankFactors&, int, int) -> std::vector<float> { notBuilt(); },
      [](const cuda::EspCudaProblem&, const cuda::EspCudaOptions&) -> cuda::EspCudaResult { notBuilt(); },
      [](const cuda::EspSoftProblem&, const cuda::SliceCoefficients&, const std::function<bool()>&)
          -> cuda::EspSoftCudaResult { notBuilt(); }};
  return kernels;
}
#endif

}  // namespace tl
