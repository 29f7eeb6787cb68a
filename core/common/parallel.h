#pragma once
// Splitting a loop over [0, n) across the CPU's cores (OpenMP when the build has it, one thread otherwise).
// The body gets half-open ranges [begin, end) so per-range buffers are allocated once per range, not per index,
// and must not throw: an exception cannot leave an OpenMP region.
#include <algorithm>

#include <Eigen/Core>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tl {

// Threads a parallel loop may use: OpenMP's setting (OMP_NUM_THREADS, or set by `tlens bench --threads`).
inline int parallelThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Sets the thread count of parallelFor and of Eigen's own products (both read OpenMP's setting).
inline void setParallelThreads(int threads) {
#ifdef _OPENMP
  omp_set_num_threads(std::max(1, threads));
#endif
  Eigen::setNbThreads(std::max(1, threads));
}

// Runs body(begin, end) over one contiguous range per thread. `work` is the cost of the whole loop in
// element operations: below kSerialWork the loop runs on the calling thread (a fork costs microseconds).
template <class Body>
void parallelFor(Eigen::Index n, double work, Body&& body) {
  constexpr double kSerialWork = 1 << 15;
  const int threads = int(std::min<Eigen::Index>(parallelThreads(), n));
  if (threads <= 1 || work < kSerialWork) {
    if (n > 0) body(Eigen::Index(0), n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) body(n * t / threads, n * (t + 1) / threads);
#endif
}

}  // namespace tl
