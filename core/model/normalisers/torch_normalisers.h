#pragma once
// Differentiable LibTorch versions of the core normalisers, for training and for the model's own forward
// pass: softmax, sinkhorn, esp and lot, batched over [B, H] and built from the same OperatorSpec (registry
// schema, names, defaults and validation) as the CPU operators in core/ops, whose conventions they follow
// (normaliser.h). One source file per family, mirroring core/ops/<family>/:
//   softmax.cpp  : the T = 1 Sinkhorn step (as core/ops/softmax/softmax.cpp).
//   sinkhorn.cpp : unrolled log-domain loop, T single normalisations rows first; key masks in both mask_modes.
//   esp.cpp      : SoftSort plans while training, the spec's `sort` in eval mode; the fused soft output of
//                  esp_soft_output.h for training without the attention matrix.
//   lot.cpp      : learned pivots per head (`pivots` [H, r, d], `mass_logits` [H, r]), O in O(n r d).
// makeTorchNormaliser builds them through one table keyed by family name (torch_normalisers.cpp); the
// registry's FamilyInfo::backends says which families declare Backend::Torch, and a test checks that the
// two lists agree.
// This header includes LibTorch: only model/ sources include it (docs/building.md#header-hygiene).
#include <string>
#include <vector>

#include "model/normalisers/normaliser.h"

namespace tl {

// Whether the registry declares a LibTorch version of `family` (familiesOn(Backend::Torch)); the others
// (asap, banded, diff) run through the core path only.
bool hasTorchNormaliser(const std::string& family);

// The families the factory table holds (torch_normalisers.cpp), in its order.
std::vector<std::string> torchNormaliserFamilies();

// `spec` as resolved by OperatorRegistry::parse/resolve; `heads` × `headDim` sizes the learned parameters
// (LOT pivots, initialised Z ~ N(0, 1/d) from torch's generator and mass logits 0, or from the spec's
// pivots/mass_logits files). InvalidArgument for families without a LibTorch version.
TorchNormaliser makeTorchNormaliser(const OperatorSpec& spec, int heads, int headDim);

}  // namespace tl
