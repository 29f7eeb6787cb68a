#pragma once
// TorchScript archives (torch.jit.script / torch.jit.trace, saved from Python) loaded by LibTorch; only the
// parameters are taken, by their dotted module names. Plain types here, LibTorch in the .cpp.
#include <string>

#include "io/checkpoint/tensor_map.h"

namespace tl {

// Throws FileError naming the file when LibTorch cannot load it.
TensorMap readTorchScriptParameters(const std::string& path);

// Lets readVitCheckpoint (vit/vit_checkpoint.h, no LibTorch) read TorchScript archives through
// readTorchScriptParameters. Every model-layer entry point that reads checkpoints calls it; idempotent.
void useLibTorchForTorchScript();

}  // namespace tl
