#pragma once
// The ASAP compiler on a trained Sinkhorn checkpoint (docs/operators/asap.md#compiled-models): run the frozen
// model on unlabeled calibration images, take every head's Q, K at each compiled layer, run the teacher's own
// Sinkhorn (its T, eps, mask) to get the closure-ready dual (u after step T − 1, or T − 2 for odd T), and fit
// one β per layer over all heads and images (ops/asap/asap_fit.h).
//   parallel   (default): every layer sees the teacher upstream;
//   sequential : layer ℓ sees the compiled ASAP layers < ℓ upstream (each saved before the next is fitted).
// Plain std/Eigen types (no LibTorch), so the CLI and the GUI include it.
#include <string>
#include <vector>

#include "common/feedback.h"
#include "model/vit_inference.h"
#include "ops/asap/asap_fit.h"
#include "ops/asap/compiled_asap.h"

namespace tl {

struct AsapCompileOptions {
  std::string calibration = "fashion-mnist:train:0-999";  // split and image range (inclusive)
  std::vector<int> layers;  // empty = every layer
  int L = 64;               // slices per layer
  uint64_t seed = 0;        // slice bank of layer ℓ: seed + ℓ
  FitKind fit = FitKind::Ls;
  double lambdaB = 1e-4;
  bool sequential = false;
  bool shared = false;  // one slice bank (seed) and one β for every compiled layer, fitted on all of them
  std::string out;  // folder of the compiled model (written when done; after every layer when sequential)
};

// The teacher's normaliser must be sinkhorn with T ≥ 2 (T = 1 is softmax: nothing to compile).
// InvalidArgument for a wrong calibration string, layer or teacher; Canceled when cancelled (nothing of the
// unfinished layer is written).
CompiledAsap compileAsap(const VitRunner& runner, const std::string& checkpoint, const AsapCompileOptions& options,
                         Feedback& feedback = noFeedback());

// "asap:compiled=DIR,eps=…,closing=…" for the compiled model in `dir`: two-sided ASAP ending on the teacher's
// side, each layer using its own slices and β.
std::string compiledAsapOperator(const CompiledAsap& compiled, const std::string& dir);

}  // namespace tl
