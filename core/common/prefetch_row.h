#pragma once
// Asking for a matrix row ahead of its use, for loops that read rows in an order the hardware prefetcher
// cannot guess (ESP's slices visit tokens in rank order; its plan rows gather the keys each slice matched).
#include <cstddef>

#include "common/matrix.h"

namespace tl {

// Every cache line of row i of the row-major M.
template <class T>
void prefetchRow(const Mat<T>& M, Eigen::Index i) {
  const char* row = reinterpret_cast<const char*>(M.data() + i * M.cols());
  for (std::size_t byte = 0; byte < std::size_t(M.cols()) * sizeof(T); byte += 64) __builtin_prefetch(row + byte);
}

}  // namespace tl
