#pragma once
// The GPU behind dense_run.h's device interface: RAII device buffers (stream-ordered, so a buffer released
// while kernels still use it is freed after them, on every error path too), one stream per run, checked
// launches of the block.h kernel bodies, bounded work in flight with cancellation between half-steps, and
// CUDA failures turned into CudaError messages (cuda_error.h). Included by .cu files only.
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/block.h"
#include "cuda/cuda_error.h"
#include "cuda/launch_config.h"

namespace tl::cuda {

// Throws CudaError for a failed CUDA call; `what` says which step ("allocating q", "running LsePartialKernel").
[[noreturn]] void throwCudaError(cudaError_t err, const std::string& what);
inline void checkCuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throwCudaError(err, what);
}

// block.h on the device: one thread's view of its phase, registers in one struct.
struct DeviceBlock {
  template <class T>
  struct Local {
    T value;
    TL_HOST_DEVICE explicit Local(DeviceBlock&) {}
    TL_HOST_DEVICE TL_FORCE_INLINE T& operator[](int) { return value; }
  };
  template <class F>
  TL_HOST_DEVICE TL_FORCE_INLINE void forEach(F&& f) {
#if defined(__CUDA_ARCH__)
    f(int(threadIdx.x));
#endif
  }
  TL_HOST_DEVICE TL_FORCE_INLINE void sync() {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
};

// Kernel::kMinBlocks (optional, default 1): resident blocks per multiprocessor the register allocation must allow.
template <class Kernel, class = void>
struct MinBlocks {
  static constexpr int value = 1;
};
template <class Kernel>
struct MinBlocks<Kernel, std::void_t<decltype(Kernel::kMinBlocks)>> {
  static constexpr int value = Kernel::kMinBlocks;
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, MinBlocks<Kernel>::value)
    kernelEntry(const typename Kernel::Params params) {
  __shared__ typename Kernel::Shared shared;
  DeviceBlock block;
  Kernel::run(block, params, BlockIndex{int(blockIdx.x), int(blockIdx.y), int(blockIdx.z)}, shared);
}

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Stream-ordered (cudaMallocAsync) where the device has memory pools; plain cudaMalloc otherwise.
  DeviceBuffer(size_t count, cudaStream_t stream, bool streamOrdered, const char* what)
      : count_(count), stream_(stream), streamOrdered_(streamOrdered) {
    if (count == 0) return;
    void* p = nullptr;
    const cudaError_t err =
        streamOrdered ? cudaMallocAsync(&p, count * sizeof(T), stream) : cudaMalloc(&p, count * sizeof(T));
    if (err != cudaSuccess) {
      count_ = 0;
      throwCudaError(err, std::string("allocating ") + what + " (" + formatBytes(double(count) * sizeof(T)) + ")");
    }
    ptr_ = static_cast<T*>(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer(std::move(o)).swap(*this);
    return *this;
  }
  ~DeviceBuffer() {  // never throws; errors surface at the next checked call
    if (ptr_ && streamOrdered_) cudaFreeAsync(ptr_, stream_);
    if (ptr_ && !streamOrdered_) cudaFree(ptr_);  // waits for the device first
  }
  T* data() const { return ptr_; }
  size_t size() const { return count_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    std::swap(stream_, o.stream_);
    std::swap(streamOrdered_, o.streamOrdered_);
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
  bool streamOrdered_ = false;
};

// Elapsed milliseconds between two events on a stream (RAII).
class EventTimer {
 public:
  EventTimer() {
    checkCuda(cudaEventCreate(&start_), "creating a timing event");
    const cudaError_t err = cudaEventCreate(&stop_);
    if (err != cudaSuccess) {
      cudaEventDestroy(start_);
      throwCudaError(err, "creating a timing event");
    }
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t s) { checkCuda(cudaEventRecord(start_, s), "recording a timing event"); }
  double stopMs(cudaStream_t s) {
    checkCuda(cudaEventRecord(stop_, s), "recording a timing event");
    checkCuda(cudaEventSynchronize(stop_), "timing a kernel");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start_, stop_), "reading a timing event");
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

class CudaDevice {
 public:
  template <class T>
  using Buffer = DeviceBuffer<T>;

  // Selects `device` and creates the run's stream; throws CudaError when there is no usable device.
  // syncEachKernel (or TL_CUDA_SYNC=1 in the environment): wait after every launch, so a failure names its kernel.
  CudaDevice(int device, bool syncEachKernel);
  ~CudaDevice();  // waits for the stream; never throws
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  template <class T>
  Buffer<T> alloc(size_t count, const char* what) {
    return Buffer<T>(count, stream_, streamOrdered_, what);
  }
  template <class T>
  void upload(Buffer<T>& dst, const T* src, size_t count) {
    copy(dst.data(), src, count * sizeof(T), cudaMemcpyHostToDevice, "uploading inputs");
  }
  template <class T>
  void download(T* dst, const Buffer<T>& src, size_t count) {
    copy(dst, src.data(), count * sizeof(T), cudaMemcpyDeviceToHost, "downloading results");
  }

  template <class Kernel>
  void launch(const char* name, Grid grid, const typename Kernel::Params& params) {
    checkGrid(grid, name);
    kernelEntry<Kernel><<<dim3(unsigned(grid.x), unsigned(grid.y), unsigned(grid.z)), Kernel::kThreads, 0, stream_>>>(
        params);
    afterLaunch(name);
  }

  // Keeps at most two half-steps in flight, then polls `canceled` (throws tl::Canceled).
  void afterHalfStep(const std::function<bool()>& canceled);
  // Waits for everything launched and reports the first asynchronous failure.
  void finish();
  double freeBytes() const;
  DeviceLimits limits() const { return limits_; }
  cudaStream_t stream() const { return stream_; }

 private:
  void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* what);
  void checkGrid(Grid grid, const char* name) const;
  void afterLaunch(const char* name);
  void release() noexcept;

  int device_ = 0;
  bool syncEachKernel_ = false;
  bool streamOrdered_ = false;  // the device supports cudaMallocAsync
  cudaStream_t stream_ = nullptr;
  cudaEvent_t halfStepDone_[2] = {nullptr, nullptr};
  long long halfSteps_ = 0;
  DeviceLimits limits_;
  std::string lastKernel_ = "no kernel yet";
};

}  // namespace tl::cuda
