#pragma once
// Splitting a loop over [0, n) across the CPU's cores (OpenMP when the build has it, one thread otherwise).
// The body gets half-open ranges [begin, end) so per-range buffers are allocated once per range, not per index,
// and must not throw: an exception cannot leave an OpenMP region.
#include <algorithm>
#include <exception>
#include <vector>

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

// Runs body(i) for every i in [0, n), the items handed out one at a time to the cores (for loops of few,
// costly, independent items of uneven cost: networks, attention paths). Each item must write only its own
// slot, so results do not depend on the thread count. Eigen's own products inside the body run on one thread
// (Eigen does not fork inside a parallel region). An exception thrown by body(i) is kept, and the one of the
// smallest i is rethrown after the loop: callers see what a serial loop would have thrown first.
template <class Body>
void parallelForEach(Eigen::Index n, Body&& body) {
  std::vector<std::exception_ptr> failures(static_cast<size_t>(std::max<Eigen::Index>(n, 0)));
  auto run = [&](Eigen::Index i) {
    try {
      body(i);
    } catch (...) {
      failures[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  const int threads = int(std::min<Eigen::Index>(parallelThreads(), n));
  if (threads <= 1) {
    for (Eigen::Index i = 0; i < n; ++i) {
      run(i);
      if (failures[static_cast<size_t>(i)]) break;  // as a serial loop would
    }
  } else {
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (Eigen::Index i = 0; i < n; ++i) run(i);
#endif
  }
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace tl
