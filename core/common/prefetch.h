#pragma once
// Software prefetch: asking for cache lines ahead of their use where the hardware prefetcher cannot guess them
// (rows read in a data-dependent order) or does not run far enough ahead (a row read from memory, then worked on
// in cache for longer than its read took).
#include <cstddef>

#include <Eigen/Core>

namespace tl {

inline constexpr std::size_t kCacheLineBytes = 64;

// Asks for every cache line of [data, data + count).
template <class T>
void prefetchSegment(const T* data, Eigen::Index count) {
  const char* bytes = reinterpret_cast<const char*>(data);
  for (std::size_t b = 0; b < std::size_t(count) * sizeof(T); b += kCacheLineBytes) __builtin_prefetch(bytes + b);
}

}  // namespace tl
