#pragma once
// Launch choices of the CUDA backend as pure functions (FlashAttention 3's tile_size.h idea): what the host
// launchers decide from a problem's shape and the device, testable on the CPU. Plain C++, no CUDA.
#include <string>
#include <vector>

namespace tl::cuda {

// What the launch choices need to know about the GPU.
struct DeviceLimits {
  int smCount = 132;
};

constexpr int kMaxKeySplits = 32;

// Key splits of one LSE pass (FlashDecoding's split-KV): with few row blocks (one head, short sequences)
// the key axis is cut into `splits` contiguous ranges whose partial (max, sum) states are merged afterwards,
// so the GPU gets about four blocks per multiprocessor. 1 ≤ splits ≤ min(keyTiles, kMaxKeySplits).
int chooseKeySplits(long long rowBlocks, long long keyTiles, const DeviceLimits& limits);

// Display tiles: block columns per thread block. Each thread block handles one block row of one head and a
// group of at most maxCellsPerBlock block columns; groups are added only when block rows × heads are too few
// to fill the GPU. Returns a value in [1, min(cols, maxCellsPerBlock)].
int chooseDisplayCellsPerGroup(long long batch, long long rows, long long cols, int maxCellsPerBlock,
                               const DeviceLimits& limits);

// Device memory a run needs, item by item, for a clear message before anything is allocated.
struct MemoryItem {
  std::string what;  // e.g. "dense plan"
  double bytes = 0;
};
struct MemoryEstimate {
  std::vector<MemoryItem> items;
  double total() const;
  const MemoryItem& largest() const;
};

// "740 B", "12.0 KiB", "512.0 MiB", "12.3 GiB".
std::string formatBytes(double bytes);

// One line a user can act on, e.g. "CUDA out of memory: the Sinkhorn plan path needs 12.3 GiB (dense plan
// 12.0 GiB) for batch 32 × 65536 × 65536, but the GPU has 8.0 GiB free; use the fused output path (no
// dense plan) or fewer heads".
std::string outOfMemoryMessage(const std::string& path, const MemoryEstimate& estimate, long long batch,
                               long long nq, long long nk, double freeBytes);

}  // namespace tl::cuda
