#include "cuda/cuda_device.cuh"

#include <cstdlib>
#include <cstring>

#include "common/errors.h"

namespace tl::cuda {
namespace {

CudaFailure classify(cudaError_t err) {
  switch (err) {
    case cudaErrorMemoryAllocation:
      return CudaFailure::OutOfMemory;
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return CudaFailure::OldDriver;
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
      return CudaFailure::NoDevice;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return CudaFailure::KernelFault;
    default:
      return CudaFailure::Other;
  }
}

}  // namespace

void throwCudaError(cudaError_t err, const std::string& what) {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::string text = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
  if (err == cudaErrorNoKernelImageForDevice)
    text += "; this build has no GPU code for this device (rebuild with its compute capability in CMAKE_CUDA_ARCHITECTURES)";
  throw CudaError(cudaFailureMessage(classify(err), what, text, driver, runtime));
}

CudaDevice::CudaDevice(int device, bool syncEachKernel) : device_(device), syncEachKernel_(syncEachKernel) {
  const char* env = std::getenv("TL_CUDA_SYNC");
  if (env && std::strcmp(env, "1") == 0) syncEachKernel_ = true;
  int count = 0;
  checkCuda(cudaGetDeviceCount(&count), "looking for a CUDA device");
  if (device < 0 || device >= count)
    throw CudaError("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                    " found): choose another device, or use the CPU backend");
  checkCuda(cudaSetDevice(device), "selecting the CUDA device");
  int sms = 0, pools = 0;
  checkCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "querying the CUDA device");
  checkCuda(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device), "querying the CUDA device");
  limits_.smCount = sms;
  streamOrdered_ = pools != 0;
  checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a CUDA stream");
  for (cudaEvent_t& e : halfStepDone_) {
    const cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (err != cudaSuccess) {
      release();  // the destructor will not run for a constructor that throws
      throwCudaError(err, "creating a CUDA event");
    }
  }
}

CudaDevice::~CudaDevice() { release(); }

void CudaDevice::release() noexcept {
  if (stream_) cudaStreamSynchronize(stream_);
  for (cudaEvent_t& e : halfStepDone_) {
    if (e) cudaEventDestroy(e);
    e = nullptr;
  }
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

void CudaDevice::copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* what) {
  if (bytes == 0) return;
  checkCuda(cudaMemcpyAsync(dst, src, bytes, kind, stream_), what);
  // Pageable host memory: the copy is complete (or staged) when cudaMemcpyAsync returns; a download is
  // read right after, so wait for it.
  if (kind == cudaMemcpyDeviceToHost) checkCuda(cudaStreamSynchronize(stream_), (std::string(what) + " after " + lastKernel_).c_str());
}

void CudaDevice::checkGrid(Grid grid, const char* name) const {
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.x > 2147483647LL || grid.y > 65535 || grid.z > 65535)
    throw CudaError(std::string("internal error: grid ") + std::to_string(grid.x) + " × " + std::to_string(grid.y) +
                    " × " + std::to_string(grid.z) + " of " + name + " exceeds CUDA's limits; please report this bug");
}

void CudaDevice::afterLaunch(const char* name) {
  lastKernel_ = name;
  checkCuda(cudaGetLastError(), (std::string("launching ") + name).c_str());
  if (syncEachKernel_) checkCuda(cudaStreamSynchronize(stream_), (std::string("running ") + name).c_str());
}

void CudaDevice::afterHalfStep(const std::function<bool()>& canceled) {
  cudaEvent_t now = halfStepDone_[halfSteps_ % 2];
  checkCuda(cudaEventRecord(now, stream_), "recording a half-step");
  if (halfSteps_ > 0)
    checkCuda(cudaEventSynchronize(halfStepDone_[(halfSteps_ - 1) % 2]), ("running " + lastKernel_).c_str());
  ++halfSteps_;
  if (canceled && canceled()) throw Canceled();
}

void CudaDevice::finish() {
  checkCuda(cudaStreamSynchronize(stream_), ("running " + lastKernel_).c_str());
  checkCuda(cudaGetLastError(), ("running " + lastKernel_).c_str());
}

double CudaDevice::freeBytes() const {
  size_t free = 0, total = 0;
  checkCuda(cudaMemGetInfo(&free, &total), "querying free GPU memory");
  return double(free);
}

}  // namespace tl::cuda
