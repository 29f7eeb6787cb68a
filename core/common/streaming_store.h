#pragma once
// Writing dense blocks that will not be read again soon without reading them first: streaming (non-temporal)
// stores. A plain store to a line that is not in cache first reads the line (read for ownership), so filling an
// n × n plan larger than the caches moves every byte twice; streamed, each line is written once, whole, past the
// caches. x86-64 only (SSE2, in every x86-64 CPU); elsewhere plain copies.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/matrix.h"

namespace tl {

// Above this size a dense block is streamed: it does not fit the caches. Below, plain stores leave it in cache for
// its reader and are faster. Dense ESP on two threads of the development VM (32 MiB L3), float32, best of 20-24
// runs: n = 4096 (64 MiB) 7.1-7.5 → 6.1-6.7 ms streamed; n = 2048 (16 MiB) 2.40 → 2.50, n = 1024 1.06 → 1.12.
inline constexpr std::size_t kStreamAboveBytes = std::size_t(16) << 20;

// to[0, n) ← from[0, n), the part of `to` on 16-byte boundaries streamed. Call finishStreamingStores() before
// the written memory is handed to another thread.
template <class T>
void streamCopy(const T* from, T* to, std::size_t n) {
#if defined(__SSE2__)
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
  constexpr std::size_t kPerStore = 16 / sizeof(T);
  std::size_t i = 0;
  for (; i < n && (reinterpret_cast<std::uintptr_t>(to + i) % 16) != 0; ++i) to[i] = from[i];
  for (; i + kPerStore <= n; i += kPerStore)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
  for (; i < n; ++i) to[i] = from[i];
#else
  std::copy(from, from + n, to);
#endif
}

// Orders this thread's streamed stores before its later ones (the end of a parallel loop included).
inline void finishStreamingStores() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Rows [begin, end) of `block`, each written whole by writeRow(r, row) (every one of its block.cols() entries):
// in place, or, for a block above kStreamAboveBytes, in a buffer that stays in cache and is then streamed to the
// block. One thread's share of a parallel loop.
template <class T, class WriteRow>
void writeDenseRows(Mat<T>& block, Eigen::Index begin, Eigen::Index end, WriteRow&& writeRow) {
  const bool stream = std::size_t(block.size()) * sizeof(T) > kStreamAboveBytes;
  std::vector<T> buffer(stream ? std::size_t(block.cols()) : 0);
  for (Eigen::Index r = begin; r < end; ++r) {
    T* row = stream ? buffer.data() : block.row(r).data();
    writeRow(r, row);
    if (stream) streamCopy(buffer.data(), block.row(r).data(), buffer.size());
  }
  if (stream) finishStreamingStores();
}

}  // namespace tl
