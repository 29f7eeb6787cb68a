#include "common/large_buffers.h"

#include <climits>
#include <cstdint>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

namespace tl {

void adviseHugePages(void* data, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (bytes < kHugePageAdviceBytes) return;
  constexpr std::uintptr_t kHugePage = std::uintptr_t(2) << 20;  // the PMD size of x86-64 and 4 KiB-page arm64
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  // The result is not checked: EINVAL (no THP in the kernel) leaves the buffer on 4 KiB pages, which is correct.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

namespace {
// Large blocks come from the heap instead of mappings of their own (which free() unmaps), and the heap's free
// top is not trimmed: both are what hands a freed n × n buffer back to the kernel.
constexpr int kMaxMappedBlocks = 0;
constexpr int kTrimThreshold = INT_MAX;
}  // namespace

void keepFreedBuffers(LargeBufferThreads threads) {
#if defined(__GLIBC__)
  if (threads == LargeBufferThreads::Any) mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, kMaxMappedBlocks);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
#else
  (void)threads;
#endif
}

std::string keptBuffersTunables() {
  return "glibc.malloc.mmap_max=" + std::to_string(kMaxMappedBlocks) +
         ":glibc.malloc.trim_threshold=" + std::to_string(kTrimThreshold);
}

void releaseKeptBuffers() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

std::string transparentHugePageMode() {
  // The file reads like "always [madvise] never": the bracketed word is the mode.
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "unavailable";
  const auto open = line.find('['), close = line.find(']');
  return open != std::string::npos && close != std::string::npos && close > open
             ? line.substr(open + 1, close - open - 1)
             : "unavailable";
}

}  // namespace tl
