#include "cuda/launch_config.h"

#include <algorithm>
#include <cstdio>

namespace tl::cuda {
namespace {
long long ceilDivLL(long long a, long long b) { return (a + b - 1) / b; }
// Resident blocks the launch choices aim for: two waves of two blocks per multiprocessor.
long long targetBlocks(const DeviceLimits& limits) { return 4LL * std::max(1, limits.smCount); }
}  // namespace

int chooseKeySplits(long long rowBlocks, long long keyTiles, const DeviceLimits& limits) {
  if (rowBlocks <= 0 || keyTiles <= 1) return 1;
  const long long wanted = ceilDivLL(targetBlocks(limits), rowBlocks);
  return int(std::clamp<long long>(wanted, 1, std::min<long long>(keyTiles, kMaxKeySplits)));
}

int chooseDisplayCellsPerGroup(long long batch, long long rows, long long cols, int maxCellsPerBlock,
                               const DeviceLimits& limits) {
  const long long cap = std::max<long long>(1, std::min<long long>(cols, maxCellsPerBlock));
  const long long blocks = std::max<long long>(1, batch * rows);
  const long long groups = std::clamp<long long>(ceilDivLL(targetBlocks(limits), blocks), 1, std::max<long long>(1, cols));
  return int(std::clamp<long long>(ceilDivLL(cols, groups), 1, cap));
}

double MemoryEstimate::total() const {
  double sum = 0;
  for (const auto& item : items) sum += item.bytes;
  return sum;
}

const MemoryItem& MemoryEstimate::largest() const {
  static const MemoryItem none{"nothing", 0};
  if (items.empty()) return none;
  return *std::max_element(items.begin(), items.end(),
                           [](const MemoryItem& a, const MemoryItem& b) { return a.bytes < b.bytes; });
}

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char text[64];
  if (u == 0)
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  else
    std::snprintf(text, sizeof text, "%.1f %s", bytes, units[u]);
  return text;
}

std::string outOfMemoryMessage(const std::string& path, const MemoryEstimate& estimate, long long batch,
                               long long nq, long long nk, double freeBytes) {
  const MemoryItem& big = estimate.largest();
  const bool plan = big.what == "dense plan";
  return "CUDA out of memory: the " + path + " needs " + formatBytes(estimate.total()) + " (" + big.what + " " +
         formatBytes(big.bytes) + ") for batch " + std::to_string(batch) + " × " + std::to_string(nq) + " × " +
         std::to_string(nk) + ", but the GPU has " + formatBytes(freeBytes) + " free; " +
         (plan ? "use the fused output path (no dense plan), display tiles, or fewer heads"
               : "use fewer heads or shorter sequences");
}

}  // namespace tl::cuda
