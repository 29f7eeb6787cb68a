#pragma once
// `tlens bench --load CKPT`: how long opening a ViT checkpoint takes (reading the weights, building the model)
// and running one image through it, next to PyTorch doing the same (scripts/reference/load_reference.py:
// torch.load or a mapped safetensors file, model construction, load_state_dict) in the same invocation. Needs the
// model layer; a build without LibTorch says so (model_commands_unavailable.cpp).
#include "arguments.h"

namespace tl::cli {

int loadBench(const CommandLine& cl);

}  // namespace tl::cli
