#pragma once
// TorchScript archives (torch.jit.script / torch.jit.trace, saved from Python) loaded by LibTorch; only the
// parameters are taken, by their dotted module names. Plain types here, LibTorch in the .cpp.
#include <string>

#include "model/tensor_map.h"

namespace tl {

// Throws FileError naming the file when LibTorch cannot load it.
TensorMap readTorchScriptParameters(const std::string& path);

}  // namespace tl
