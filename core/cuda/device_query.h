#pragma once
// Plain C++ face of the CUDA runtime query (implemented in device_query.cu; only built with TL_CUDA).
#include <string>

namespace tl::cuda {

// Number of usable devices; 0 with `status` set when there is no driver or device.
int deviceCount(std::string& status);

}  // namespace tl::cuda
