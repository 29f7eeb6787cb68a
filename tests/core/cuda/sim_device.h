#pragma once
// A CPU stand-in for CudaDevice (core/cuda/cuda_device.cuh) that runs the kernel bodies of core/cuda thread
// by thread (core/cuda/block.h), so the whole device path — launch grids, index arithmetic, shared-memory
// layouts, padding, bounds, the host orchestration in dense_run.h — is tested without a GPU.
// What it checks beyond the results:
//   - every buffer and every block's shared memory starts as NaN bytes, so a read of something never written
//     shows up as NaN in the results;
//   - 16-byte vector accesses must be aligned (block.h load4/store4 throw otherwise);
//   - grid limits of CUDA (y, z ≤ 65535) and positive extents;
//   - threads of a phase can run backwards (reverseThreads): a phase whose result depends on thread order
//     (a race on the GPU) gives different results forwards and backwards.
// Out-of-bounds accesses: buffers are exactly sized heap arrays, so AddressSanitizer builds catch them.
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.h"
#include "cuda/block.h"
#include "cuda/launch_config.h"

namespace tl::cuda::test {

class SimBlock {
 public:
  SimBlock(int threads, bool reverse) : threads_(threads), reverse_(reverse) {}

  template <class T>
  class Local {
   public:
    explicit Local(SimBlock& block) : values_(size_t(block.threads_)) {}
    T& operator[](int tid) { return values_.at(size_t(tid)); }

   private:
    std::vector<T> values_;
  };

  template <class F>
  void forEach(F&& f) {
    if (reverse_)
      for (int t = threads_ - 1; t >= 0; --t) f(t);
    else
      for (int t = 0; t < threads_; ++t) f(t);
  }
  void sync() {}

 private:
  int threads_;
  bool reverse_;
};

// Heap array aligned like cudaMalloc (256 bytes), filled with 0xFF bytes (NaN for float and double).
template <class T>
class SimBuffer {
 public:
  SimBuffer() = default;
  explicit SimBuffer(size_t count) : count_(count) {
    if (count == 0) return;
    data_.reset(static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t(256))));
    std::memset(static_cast<void*>(data_.get()), 0xFF, count * sizeof(T));
  }
  T* data() const { return data_.get(); }
  size_t size() const { return count_; }

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete(p, std::align_val_t(256)); }
  };
  std::unique_ptr<T, Free> data_;
  size_t count_ = 0;
};

class SimDevice {
 public:
  template <class T>
  using Buffer = SimBuffer<T>;

  bool reverseThreads = false;
  double freeBytesValue = 64.0 * (1ull << 30);
  DeviceLimits deviceLimits{4};  // few "multiprocessors": small problems still get key splits
  std::vector<std::string> launches;
  int halfSteps = 0;

  template <class T>
  Buffer<T> alloc(size_t count, const char*) {
    return Buffer<T>(count);
  }
  template <class T>
  void upload(Buffer<T>& dst, const T* src, size_t count) {
    if (count > dst.size()) throw std::logic_error("SimDevice: upload beyond the buffer");
    if (count) std::memcpy(static_cast<void*>(dst.data()), src, count * sizeof(T));
  }
  template <class T>
  void download(T* dst, const Buffer<T>& src, size_t count) {
    if (count > src.size()) throw std::logic_error("SimDevice: download beyond the buffer");
    if (count) std::memcpy(static_cast<void*>(dst), src.data(), count * sizeof(T));
  }

  template <class K>
  void launch(const char* name, Grid grid, const typename K::Params& params) {
    if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.x > 2147483647LL || grid.y > 65535 || grid.z > 65535)
      throw std::logic_error(std::string("SimDevice: invalid grid for ") + name);
    launches.push_back(name);
    for (long long z = 0; z < grid.z; ++z)
      for (long long y = 0; y < grid.y; ++y)
        for (long long x = 0; x < grid.x; ++x) {
          auto shared = std::make_unique<typename K::Shared>();
          std::memset(static_cast<void*>(shared.get()), 0xFF, sizeof(typename K::Shared));
          SimBlock block(K::kThreads, reverseThreads);
          K::run(block, params, BlockIndex{int(x), int(y), int(z)}, *shared);
        }
  }

  void afterHalfStep(const std::function<bool()>& canceled) {
    ++halfSteps;
    if (canceled && canceled()) throw Canceled();
  }
  void finish() {}
  double freeBytes() const { return freeBytesValue; }
  DeviceLimits limits() const { return deviceLimits; }
};

}  // namespace tl::cuda::test
