#pragma once
// `tlens bench --floor`: what this CPU can do at best for the work every log-domain operator is made of, so
// an operator's time can be read as a multiple of it. A half-step of Sinkhorn over an n_q × n_k score
// matrix needs n_q·n_k exponentials and one read of the scores, and the scores QKᵀ and the output A·V need
// n_q·n_k·d multiply-adds each; nothing can be faster than that.
#include <nlohmann/json.hpp>
#include <string>

#include "least_work.h"

namespace tl::cli {

struct CpuFloor {
  // Elements per second of the project's own vectorised exp (exactExp, ops/log_domain.h).
  double expPerSecond32 = 0, expPerSecond64 = 0;
  // Bytes per second of one streaming read (a sum) over an array far larger than the caches.
  double streamBytesPerSecond = 0;
  // Floating-point operations per second (a multiply-add counts 2) of vector multiply-adds on values held in
  // registers: the peak that no product can pass.
  double multiplyAddFlops32 = 0, multiplyAddFlops64 = 0;
  int threads = 1;

  // Seconds for the exponentials and streamed entries of `work` with elements of the given size: the exponentials'
  // time or the time to stream every entry once (those with an exponential too), whichever is larger, since the
  // memory traffic overlaps the arithmetic.
  double expAndStreamSeconds(const LeastWork& work, size_t bytesPerElement) const;
  // Seconds for `multiplyAdds` multiply-adds at the peak.
  double multiplyAddSeconds(double multiplyAdds, size_t bytesPerElement) const;
};

// Measures the floor with `threads` threads (median of `repeats` timings of each kernel).
CpuFloor measureCpuFloor(int threads, int repeats);

// Each throughput the larger of the two measurements: the floor of a timing bracketed by `before` and `after`.
// A virtual machine's speed changes for seconds at a time (docs/cli.md#bench), so a floor measured once per run
// may come from a slower or faster moment than an operator's timing; the faster of the two around it never
// flatters the operator.
CpuFloor fasterOf(const CpuFloor& before, const CpuFloor& after);

// The CPU model, the SIMD sets this build uses and the ones the CPU offers, for the bench JSON.
nlohmann::json cpuDescription();

nlohmann::json floorJson(const CpuFloor& floor);

}  // namespace tl::cli
