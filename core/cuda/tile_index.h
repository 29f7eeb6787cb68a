#pragma once
// Index arithmetic of the tiled kernels: padding, key splits, the thread micro-tile layout, and the block
// boundaries of downsampled display tiles. Pure functions, shared by kernels, launchers and CPU tests.
#include <cstdint>

#include "cuda/host_device.h"

namespace tl::cuda {

TL_HOST_DEVICE constexpr long long ceilDiv(long long a, long long b) { return (a + b - 1) / b; }
TL_HOST_DEVICE constexpr long long roundUp(long long a, long long b) { return ceilDiv(a, b) * b; }

// Row (or column) index inside a BM-wide tile of register slot r of the thread at position t along that
// dimension, for a thread that owns TM slots and `threadsAlong` threads that share the dimension.
// Slots come in groups of 4 consecutive indices (one 16-byte vector); group g of every thread sits in the
// g-th span of threadsAlong·4 indices, so a quarter-warp reading its vectors touches consecutive bytes
// (no shared-memory bank conflicts). With TM < 4 a thread simply owns TM consecutive indices.
// Every index in [0, threadsAlong·TM) is owned by exactly one (t, r).
TL_HOST_DEVICE constexpr int microIndex(int t, int r, int TM, int threadsAlong) {
  return TM >= 4 ? (r / 4) * (threadsAlong * 4) + t * 4 + (r % 4) : t * TM + r;
}

// Contiguous share of `count` items for part `part` of `parts` (sizes differ by at most one, none empty
// when parts ≤ count).
struct IndexRange {
  long long first = 0, last = 0;  // [first, last)
};
TL_HOST_DEVICE constexpr IndexRange splitRange(long long count, long long parts, long long part) {
  return {part * count / parts, (part + 1) * count / parts};
}

// Display tiles: an n-long axis downsampled to at most `cells` blocks. The axis gets min(n, cells) blocks;
// block c covers [blockStart(c), blockStart(c + 1)), floor(c·n/blocks), so every block is non-empty and the
// block sizes differ by at most one (e.g. 4099 → 1024 blocks of 4 or 5).
TL_HOST_DEVICE constexpr long long displayBlocks(long long n, long long cells) { return n < cells ? n : cells; }
TL_HOST_DEVICE constexpr long long blockStart(long long c, long long n, long long blocks) { return c * n / blocks; }
// The block that holds index i: the largest c with blockStart(c) ≤ i.
TL_HOST_DEVICE constexpr long long blockOf(long long i, long long n, long long blocks) {
  return ((i + 1) * blocks - 1) / n;
}

}  // namespace tl::cuda
