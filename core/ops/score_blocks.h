#pragma once
// The scores S = QKᵀ/√d formed block of rows by block of rows, each block handed to the caller's pass while it is
// still in the core's cache.
//
// Why: with d = 64, QKᵀ is a thin product whose n_q × n_k result is larger than every cache, so a pass run after
// the whole product (the scaling, a softmax) reads it back from memory. Formed in blocks of about
// kScoreBlockBytes, each block's product and the passes over it stay in the core's L2 cache, and each core runs
// its own single-threaded product on its own blocks. Blocks of about 2 MiB (the L2 cache of a core of the
// development VM) were the fastest of 0.5–4 MiB for softmax at n = 4096: smaller ones repack K for too little work.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "common/matrix.h"
#include "common/parallel.h"
#include "common/row_product.h"

namespace tl {

inline constexpr std::size_t kScoreBlockBytes = std::size_t(2) << 20;  // about one core's L2 cache

// Rows per block of an n_q × n_k score matrix: about kScoreBlockBytes, and at most n_q/8 so that small problems
// still give every core blocks; never fewer than 8 rows. The blocking depends on the shape only, never on the
// thread count, so whatever a caller sums per block is the same on any number of cores.
template <class T>
Eigen::Index scoreBlockRows(Eigen::Index nq, Eigen::Index nk) {
  const Eigen::Index bySize = Eigen::Index(kScoreBlockBytes / (sizeof(T) * std::size_t(std::max<Eigen::Index>(nk, 1))));
  return std::max<Eigen::Index>(std::min(bySize, (nq + 7) / 8), 8);
}

// The number of blocks forEachScoreBlock hands out for n_q rows and n_k keys (for per-block slots).
template <class T>
Eigen::Index scoreBlockCount(Eigen::Index nq, Eigen::Index nk) {
  const Eigen::Index rowsPerBlock = scoreBlockRows<T>(nq, nk);
  return (nq + rowsPerBlock - 1) / rowsPerBlock;
}

// The factor of the scores S = QKᵀ/√d: the rounded 1/√d, exact for d = 64 (and every d that is a power of 4),
// within an ulp of the division otherwise (docs/conventions.md#scores).
template <class T>
T scoreScale(Eigen::Index d) {
  return T(1) / std::sqrt(T(d));
}

// Writes S = QKᵀ/√d into X (which must be n_q × n_k) and calls body(block, first, end) on every block of rows
// [first, end) right after forming it; block b holds rows [b·r, (b+1)·r) for r = scoreBlockRows. Blocks are split
// across threads: body must write only its own rows and per-block slots, and must not throw.
template <class T, class Body>
void forEachScoreBlock(const Mat<T>& Q, const Mat<T>& K, Mat<T>& X, Body&& body) {
  const Eigen::Index nq = Q.rows(), rowsPerBlock = scoreBlockRows<T>(nq, K.rows());
  const Eigen::Index blocks = scoreBlockCount<T>(nq, K.rows());
  const T scale = scoreScale<T>(Q.cols());
  const ProductPanels<T> keys = productPanels(K.transpose());  // shared by every block and thread
  const double work = double(nq) * double(K.rows()) * double(Q.cols());
  parallelFor(blocks, work, [&](Eigen::Index firstBlock, Eigen::Index endBlock) {
    for (Eigen::Index b = firstBlock; b < endBlock; ++b) {
      const Eigen::Index first = b * rowsPerBlock, end = std::min(nq, first + rowsPerBlock);
      productRows(Q, keys, first, end, scale, X);
      body(b, first, end);
    }
  });
}

}  // namespace tl
