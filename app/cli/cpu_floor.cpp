#include "cpu_floor.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include <Eigen/Core>

#include "bench_common.h"
#include "common/parallel.h"
#include "ops/log_domain.h"

namespace tl::cli {
namespace {

// Median seconds of `repeats` runs of `work` after one warm-up.
template <class Work>
double medianSeconds(int repeats, Work&& work) {
  work();
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(seconds);
}

// Where each thread leaves a value derived from its work, so the compiler cannot drop the work.
struct Sink {
  std::mutex mutex;
  double total = 0;
  void add(double value) {
    const std::lock_guard<std::mutex> lock(mutex);
    total += value;
  }
};

// exactExp over 2^22 elements in [−20, 0] (the range of x − max in a log-sum-exp), written to a second array of
// the same size, each thread on its own range: arithmetic bound, both arrays per thread stay in L2/L3 sized
// chunks of 2^14 so memory traffic does not count.
template <class T>
double expPerSecond(int repeats) {
  constexpr Eigen::Index kSize = Eigen::Index(1) << 22, kChunk = Eigen::Index(1) << 14;
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  const Array x = Array::LinSpaced(kChunk, T(-20), T(0));
  Sink sink;
  const double seconds = medianSeconds(repeats, [&] {
    parallelFor(kSize / kChunk, double(kSize), [&](Eigen::Index first, Eigen::Index end) {
      Array y(kChunk);
      T total = 0;
      for (Eigen::Index c = first; c < end; ++c) {
        y = exactExp(x + T(c % 3) * T(1e-3));
        total += y(c % kChunk);
      }
      sink.add(double(total));
    });
  });
  return double(kSize) / seconds;
}

// Vector multiply-adds on accumulators held in registers, every thread on its own: kAccumulators independent
// chains, enough to keep two multiply-add units busy through their latency on the machines this runs on.
template <class T>
double multiplyAddFlops(int repeats) {
  using Packet = typename Eigen::internal::packet_traits<T>::type;
  constexpr int kAccumulators = 12, kSteps = 1 << 20;
  constexpr double kFlopsPerThread = 2.0 * kAccumulators * kSteps * Eigen::internal::packet_traits<T>::size;
  const int threads = parallelThreads();
  Sink sink;
  const double seconds = medianSeconds(repeats, [&] {
    parallelFor(threads, 1e12, [&](Eigen::Index first, Eigen::Index end) {
      for (Eigen::Index t = first; t < end; ++t) {
        // x ← x·a + b stays near 1 (a just under 1, b small), so no value overflows or turns denormal.
        const Packet a = Eigen::internal::pset1<Packet>(T(0.999)), b = Eigen::internal::pset1<Packet>(T(1e-3));
        Packet x[kAccumulators];
        for (int i = 0; i < kAccumulators; ++i) x[i] = Eigen::internal::pset1<Packet>(T(1) + T(i) * T(1e-3));
        for (int step = 0; step < kSteps; ++step)
          for (int i = 0; i < kAccumulators; ++i) x[i] = Eigen::internal::pmadd(x[i], a, b);
        T total = 0;
        for (int i = 0; i < kAccumulators; ++i) total += Eigen::internal::predux(x[i]);
        sink.add(double(total));
      }
    });
  });
  return kFlopsPerThread * threads / seconds;
}

// One read of a 256 MiB float array (a sum, so nothing is written), split across threads.
double streamBytesPerSecond(int repeats) {
  const Eigen::Index size = Eigen::Index(1) << 26;
  const Eigen::ArrayXf data = Eigen::ArrayXf::Constant(size, 1.0f);
  Sink sink;
  const double seconds = medianSeconds(repeats, [&] {
    parallelFor(size, double(size), [&](Eigen::Index first, Eigen::Index end) {
      sink.add(data.segment(first, end - first).sum());
    });
  });
  return double(size) * sizeof(float) / seconds;
}

std::string cpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string word, simd;
      while (words >> word)
        if (word.rfind("avx", 0) == 0 || word == "fma" || word == "sse4_2" || word == "neon" || word == "asimd")
          simd += (simd.empty() ? "" : " ") + word;
      return simd;
    }
  return "unknown";
}

}  // namespace

double CpuFloor::expAndStreamSeconds(const LeastWork& work, size_t bytesPerElement) const {
  const double expSeconds = work.exponentials / (bytesPerElement == 4 ? expPerSecond32 : expPerSecond64);
  const double streamSeconds =
      (work.exponentials + work.streamedEntries) * double(bytesPerElement) / streamBytesPerSecond;
  return std::max(expSeconds, streamSeconds);
}

double CpuFloor::multiplyAddSeconds(double multiplyAdds, size_t bytesPerElement) const {
  return 2 * multiplyAdds / (bytesPerElement == 4 ? multiplyAddFlops32 : multiplyAddFlops64);
}

CpuFloor measureCpuFloor(int threads, int repeats) {
  setParallelThreads(threads);
  CpuFloor floor;
  floor.threads = parallelThreads();
  floor.expPerSecond32 = expPerSecond<float>(repeats);
  floor.expPerSecond64 = expPerSecond<double>(repeats);
  floor.streamBytesPerSecond = streamBytesPerSecond(repeats);
  floor.multiplyAddFlops32 = multiplyAddFlops<float>(repeats);
  floor.multiplyAddFlops64 = multiplyAddFlops<double>(repeats);
  return floor;
}

CpuFloor fasterOf(const CpuFloor& before, const CpuFloor& after) {
  CpuFloor floor = before;
  floor.expPerSecond32 = std::max(before.expPerSecond32, after.expPerSecond32);
  floor.expPerSecond64 = std::max(before.expPerSecond64, after.expPerSecond64);
  floor.streamBytesPerSecond = std::max(before.streamBytesPerSecond, after.streamBytesPerSecond);
  floor.multiplyAddFlops32 = std::max(before.multiplyAddFlops32, after.multiplyAddFlops32);
  floor.multiplyAddFlops64 = std::max(before.multiplyAddFlops64, after.multiplyAddFlops64);
  return floor;
}

nlohmann::json cpuDescription() {
  return {{"cpu_model", cpuModel()}, {"cpu_simd_flags", cpuFlags()}, {"build_simd", Eigen::SimdInstructionSetsInUse()}};
}

nlohmann::json floorJson(const CpuFloor& floor) {
  return {{"threads", floor.threads},
          {"exp_per_second_f32", floor.expPerSecond32},
          {"exp_per_second_f64", floor.expPerSecond64},
          {"exp_ns_f32", 1e9 / floor.expPerSecond32},
          {"exp_ns_f64", 1e9 / floor.expPerSecond64},
          {"stream_gb_per_second", floor.streamBytesPerSecond / 1e9},
          {"multiply_add_gflops_f32", floor.multiplyAddFlops32 / 1e9},
          {"multiply_add_gflops_f64", floor.multiplyAddFlops64 / 1e9}};
}

}  // namespace tl::cli
