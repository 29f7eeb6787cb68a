#pragma once
// The low-rank maxima run as a template over the device (like dense_run.h): the GPU (CudaDevice, low_rank.cu)
// and, in the CPU tests, the simulated device run the same uploads, launch and download.
#include <vector>

#include "common/errors.h"
#include "cuda/launch_config.h"
#include "cuda/low_rank_cuda.h"
#include "cuda/low_rank_kernels.h"
#include "cuda/run_transfers.h"

namespace tl::cuda {

inline void validateLowRankFactors(const LowRankFactors& a, int rows, int cols) {
  if (a.nq < 1 || a.nk < 1 || a.r < 1 || !a.f || !a.gT)
    throw InvalidArgument("low-rank display tiles need factors of at least one query, key and pivot; got " +
                          std::to_string(a.nq) + " × " + std::to_string(a.r) + " and " + std::to_string(a.r) +
                          " × " + std::to_string(a.nk));
  if (rows < 1 || cols < 1 || rows > a.nq || cols > a.nk)
    throw InvalidArgument("low-rank display tiles: a grid of " + std::to_string(rows) + " × " + std::to_string(cols) +
                          " blocks needs 1 ≤ rows ≤ " + std::to_string(a.nq) + " and 1 ≤ cols ≤ " + std::to_string(a.nk));
}

template <class Dev>
std::vector<float> runLowRankMaxima(Dev& dev, const LowRankFactors& a, int rows, int cols) {
  const size_t fCount = size_t(a.nq) * size_t(a.r), gCount = size_t(a.nk) * size_t(a.r);
  const size_t cells = size_t(rows) * size_t(cols);
  MemoryEstimate need;
  need.items = {{"factors", double(fCount + gCount) * sizeof(float)}, {"display tiles", double(cells) * sizeof(float)}};
  requireDeviceMemory(dev, need, "low-rank display tiles", 1, a.nq, a.nk);
  auto f = uploadArray(dev, a.f, fCount, "factors");
  auto gT = uploadArray(dev, a.gT, gCount, "factors");
  auto max = dev.template alloc<float>(cells, "display tiles");
  const LowRankMaxKernel::Params p{f.data(), gT.data(), a.nq, a.nk, a.r, rows, cols, max.data()};
  dev.template launch<LowRankMaxKernel>("LowRankMaxKernel", LowRankMaxKernel::grid(p), p);
  dev.finish();
  return downloadVector(dev, max);
}

}  // namespace tl::cuda
