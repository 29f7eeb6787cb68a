#pragma once
// The backend axis of the registry: which implementations a family has, and what a user asks for.
//   cpu   : the Eigen reference in core/ops, float and double; every family; the source of truth.
//   cuda  : fused kernels in core/cuda (float32 compute), for the families whose kernels this build has.
//   torch : a differentiable LibTorch version in core/model/normalisers, for training and the model's own
//           forward pass (tl_model implements exactly the families that declare it; a test checks that).
#include <string>

namespace tl {

enum class Backend { Cpu, Cuda, Torch };
const char* backendName(Backend backend);  // "cpu" | "cuda" | "torch"

// The device a user asks for (Session `device`, `tlens --device`, the operator panel): auto = cuda when a
// usable CUDA device exists and the family runs there, else cpu.
enum class DeviceChoice { Cpu, Cuda, Auto };
DeviceChoice parseDeviceChoice(const std::string& text);  // InvalidArgument naming the choices
const char* deviceChoiceName(DeviceChoice choice);

// True when this build has the CUDA kernels (TL_CUDA); whether a device is usable: cuda/backend.h.
bool cudaKernelsBuilt();

}  // namespace tl
