#pragma once
// `tlens bench --device cuda` (gpu_bench.cpp, built with TL_CUDA): JSON with the GPU, its exp floor, the fused
// CUDA paths in fp32 and tf32, and PyTorch SDPA, a dense PyTorch Sinkhorn, the Sinkformers code and
// FlashSinkhorn timed in the same run on the same shapes.
#include "arguments.h"

namespace tl::cli {

int gpuBench(const CommandLine& cl);

}  // namespace tl::cli
