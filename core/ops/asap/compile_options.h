#pragma once
// What the ASAP compiler is asked to do (model/asap_compiler.h, docs/operators/asap.md#compiled-models). Below
// the model layer, so the model seam (vit/model_backend.h) and the GUI's compile dialog name it without LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "ops/asap/asap_fit.h"

namespace tl {

struct AsapCompileOptions {
  std::string calibration = "fashion-mnist:train:0-999";  // split and image range (inclusive)
  std::vector<int> layers;  // empty = every layer
  int L = 64;               // slices per layer
  uint64_t seed = 0;        // slice bank of layer ℓ: seed + ℓ
  FitKind fit = FitKind::Ls;
  AsapFeatures features = AsapFeatures::Potentials;  // docs/operators/asap.md#feature-families
  double lambdaB = 1e-4;
  bool sequential = false;
  bool shared = false;  // one slice bank (seed) and one β for every compiled layer, fitted on all of them
  std::string out;  // folder of the compiled model (written when done; after every layer when sequential)
};

}  // namespace tl
