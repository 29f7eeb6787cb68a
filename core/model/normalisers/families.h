#pragma once
// The factory of each family's LibTorch normaliser, one source file per family (softmax.cpp, sinkhorn.cpp,
// esp.cpp, lot.cpp); torch_normalisers.cpp holds the one table that maps family names to them. `spec` is
// resolved against the registry's schema; `heads` × `headDim` sizes learned parameters.
// No LibTorch here: a family whose normaliser is another's (softmax) builds without it.
#include <memory>

#include "ops/registry.h"
#include "ops/sinkhorn/sinkhorn.h"

namespace tl {

class TorchNormaliserImpl;
using TorchNormaliser = std::shared_ptr<TorchNormaliserImpl>;
using TorchNormaliserFactory = TorchNormaliser (*)(OperatorSpec spec, int heads, int headDim);

TorchNormaliser makeSoftmaxNormaliser(OperatorSpec spec, int heads, int headDim);
TorchNormaliser makeSinkhornNormaliser(OperatorSpec spec, int heads, int headDim);
TorchNormaliser makeEspNormaliser(OperatorSpec spec, int heads, int headDim);
TorchNormaliser makeLotNormaliser(OperatorSpec spec, int heads, int headDim);

// Sinkhorn's normaliser with the given parameters under `spec`'s name: softmax is its T = 1 step.
TorchNormaliser makeSinkhornStepNormaliser(OperatorSpec spec, const SinkhornParams& params);

}  // namespace tl
