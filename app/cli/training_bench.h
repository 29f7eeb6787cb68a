#pragma once
// `tlens bench --training`: one training step of each LibTorch normaliser on the CPU, its training path
// next to its dense graph in the same run (model/normaliser_step_timing.h). Needs the model layer; a build
// without LibTorch says so (model_commands_unavailable.cpp).
#include "arguments.h"

namespace tl::cli {

int trainingBench(const CommandLine& cl);

}  // namespace tl::cli
