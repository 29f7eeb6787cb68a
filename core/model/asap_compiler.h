#pragma once
// The ASAP compiler on a trained Sinkhorn checkpoint (docs/operators/asap.md#compiled-models): run the frozen
// model on unlabeled calibration images, take every head's Q, K at each compiled layer, run the teacher's own
// Sinkhorn (its T, eps, mask) to get the closure-ready dual (u after step T − 1, or T − 2 for odd T), and fit
// one β per layer over all heads and images (ops/asap/asap_fit.h).
//   parallel   (default): every layer sees the teacher upstream;
//   sequential : layer ℓ sees the compiled ASAP layers < ℓ upstream (each saved before the next is fitted).
// Plain std/Eigen types (no LibTorch), so the CLI includes it; the GUI reaches it through the model seam
// (ModelBackend::compileAsap).
#include <string>
#include <vector>

#include "common/feedback.h"
#include "model/vit_inference.h"
#include "ops/asap/compile_options.h"
#include "ops/asap/compiled_asap.h"

namespace tl {

// The teacher's normaliser must be sinkhorn with T ≥ 2 (T = 1 is softmax: nothing to compile).
// InvalidArgument for a wrong calibration string, layer or teacher; Canceled when cancelled (nothing of the
// unfinished layer is written).
CompiledAsap compileAsap(const VitRunner& runner, const std::string& checkpoint, const AsapCompileOptions& options,
                         Feedback& feedback = noFeedback());

}  // namespace tl
