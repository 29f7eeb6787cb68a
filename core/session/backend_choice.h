#pragma once
// Which backend runs an operator for the device a user chose (Session `device`, `tlens --device`, the
// operator panel). Never silent: a CPU run where the GPU was asked for carries the reason, shown in the status
// bar and written to metrics.json.
#include <string>

#include "ops/backend.h"
#include "ops/operator.h"

namespace tl {

struct BackendChoice {
  Backend backend = Backend::Cpu;
  std::string note;  // why the CPU runs although the GPU was asked for (empty otherwise)
};

//  cpu  : the CPU.
//  cuda : the GPU; the CPU (with the reason) for an operator without a CUDA path for its parameters.
//         ResourceError when this build has no CUDA or no usable device: asking for the GPU explicitly and
//         not getting it is an error, not a fallback.
//  auto : the GPU when a usable device exists and the operator runs there, else the CPU (with the reason).
BackendChoice chooseBackend(const Operator& op, DeviceChoice choice);

// The short device text for status bars and metrics: "cpu" or "cuda (NVIDIA H200)".
std::string deviceLabel(Backend backend);

}  // namespace tl
