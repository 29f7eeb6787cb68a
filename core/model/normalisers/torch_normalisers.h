#pragma once
// Differentiable LibTorch versions of the core normalisers, for training and for the model's own forward
// pass: softmax, sinkhorn, esp and lot, batched over [B, H] and built from the same OperatorSpec (registry
// schema, names, defaults and validation) as the CPU operators in core/ops, whose conventions they follow:
// scores S = QKᵀ/√d on unscaled Q, K, attention scale A = n_q·P (rows sum to 1), O = A V.
//   softmax  : the T = 1 Sinkhorn step (as core/ops/softmax/softmax.cpp).
//   sinkhorn : unrolled log-domain loop, T single normalisations rows first (docs/operators/sinkhorn.md); key
//              masks in both mask_modes, with −inf potentials instead of multiplied masks
//              (docs/conventions.md#log-domain).
//   esp      : SoftSort plans while the module is training (sort_temp), the spec's `sort` in eval mode
//              (hard by default). Hard plans come from the core's slices (ops/esp/esp_slice.h), so ties,
//              slicers and rank couplings are the core's; gradients reach Q, K through the slice weights and
//              V. Without the attention matrix (training), soft p = 2 self-attention runs through
//              model/normalisers/esp_soft_output.h, which never forms the [B, H, L, n, n] plans.
//   lot      : learned pivots per head, parameters `pivots` [H, r, d] and `mass_logits` [H, r]; two log-domain
//              problems with budget T and the glued coupling applied in O(n r d)
//              (docs/operators/lot.md#definition).
// This header includes LibTorch: only model/ sources include it (docs/building.md#header-hygiene).
#include <torch/torch.h>

#include <memory>

#include "ops/registry.h"

namespace tl {

struct TorchAttention {
  torch::Tensor output;     // [B, H, n_q, d_v] = A V
  torch::Tensor attention;  // [B, H, n_q, n_k] attention-scale plan; undefined unless asked for
};

class TorchNormaliserImpl : public torch::nn::Module {
 public:
  explicit TorchNormaliserImpl(OperatorSpec spec) : spec_(std::move(spec)) {}
  const OperatorSpec& spec() const { return spec_; }

  // q [B, H, n_q, d], k [B, H, n_k, d], v [B, H, n_k, d_v]. keyMask: [B, n] bool (true = valid token) for
  // padded self-attention (n_q = n_k = n), or undefined. Padded rows of A and O are 0 under subsequence.
  virtual TorchAttention forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 bool withAttention, const torch::Tensor& keyMask = {}) = 0;

 private:
  OperatorSpec spec_;
};

using TorchNormaliser = std::shared_ptr<TorchNormaliserImpl>;

// The families with a LibTorch version; the others (asap, banded, diff) run through the core path only.
bool hasTorchNormaliser(const std::string& family);

// `spec` as resolved by OperatorRegistry::parse/resolve; `heads` × `headDim` sizes the learned parameters
// (LOT pivots, initialised Z ~ N(0, 1/d) from torch's generator and mass logits 0, or from the spec's
// pivots/mass_logits files). InvalidArgument for families without a LibTorch version.
TorchNormaliser makeTorchNormaliser(const OperatorSpec& spec, int heads, int headDim);

}  // namespace tl
