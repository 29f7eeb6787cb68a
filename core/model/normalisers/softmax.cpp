// softmax: row softmax is the T = 1 Sinkhorn step (as ops/softmax/softmax.cpp computes it), so its LibTorch
// normaliser is Sinkhorn's with T = 1, eps = 1 and softmax's mask_mode.
#include "model/normalisers/families.h"
#include "ops/softmax/softmax.h"

namespace tl {

TorchNormaliser makeSoftmaxNormaliser(OperatorSpec spec, int /*heads*/, int /*headDim*/) {
  SinkhornParams asSinkhorn;
  asSinkhorn.T = 1;
  asSinkhorn.eps = 1.0;
  asSinkhorn.maskMode = SoftmaxParams::from(spec.params).maskMode;
  return makeSinkhornStepNormaliser(std::move(spec), asSinkhorn);
}

}  // namespace tl
