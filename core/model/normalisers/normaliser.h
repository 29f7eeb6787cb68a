#pragma once
// The interface every LibTorch normaliser implements (the torch counterpart of ops/operator.h), and the
// input checks they share. One source file per family, as core/ops/<family>/ has: softmax.cpp,
// sinkhorn.cpp, esp.cpp (with esp_soft_output.*), lot.cpp; torch_normalisers.h builds them by family name.
// Conventions are the core operators': scores S = QKᵀ/√d on unscaled Q, K, attention scale A = n_q·P (rows
// sum to 1), O = A V.
// This header includes LibTorch: only model/ sources and torch-labelled tests include it.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "common/errors.h"
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

// InvalidArgument naming `family` unless q, k, v are [B, H, n_q, d], [B, H, n_k, d], [B, H, n_k, d_v].
inline void checkShapes(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const std::string& family) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.size(0) != k.size(0) || q.size(1) != k.size(1) ||
      q.size(-1) != k.size(-1) || v.size(0) != k.size(0) || v.size(1) != k.size(1) || v.size(2) != k.size(2))
    throw InvalidArgument(family + ": expected q [B,H,n_q,d], k [B,H,n_k,d], v [B,H,n_k,d_v]; got q " +
                          c10::str(q.sizes()) + ", k " + c10::str(k.sizes()) + ", v " + c10::str(v.sizes()));
}

// True when the mask pads at least one token; throws InvalidArgument for a malformed mask.
inline bool checkKeyMask(const torch::Tensor& mask, const torch::Tensor& q, const torch::Tensor& k,
                         const std::string& family) {
  if (!mask.defined()) return false;
  if (mask.scalar_type() != torch::kBool || mask.dim() != 2 || mask.size(0) != q.size(0) ||
      mask.size(1) != q.size(2) || q.size(2) != k.size(2))
    throw InvalidArgument(family + ": the key mask must be a [B, n] bool tensor for self-attention over n tokens; got " +
                          c10::str(mask.sizes()));
  if (!mask.any(1).all().item<bool>())
    throw InvalidArgument(family + ": every sequence needs at least one valid (unmasked) token");
  return !mask.all().item<bool>();
}

// O = A V, with A kept when asked for.
inline TorchAttention mix(const torch::Tensor& A, const torch::Tensor& v, bool withAttention) {
  TorchAttention out;
  out.output = torch::matmul(A, v);
  if (withAttention) out.attention = A;
  return out;
}

}  // namespace tl
