#pragma once
// Between LibTorch tensors and the core: conversions, and core registry operators standing in for a ViT
// block's normaliser (the swap of `tlens eval`, the model views and the rank-decay checkpoint source).
// Includes LibTorch: model/ sources only.
#include <optional>
#include <utility>
#include <vector>

#include "model/vit.h"
#include "ops/registry.h"
#include "session/engine.h"

namespace tl {

MatD toEigen(const torch::Tensor& matrix);        // float64 copy of a 2-D tensor
VecD toEigenVector(const torch::Tensor& vector);  // float64 copy of a 1-D tensor
torch::Tensor toTorch(const MatD& m);             // float32 tensor
// The image as the model's input batch of one, normalised with the config's mean and std.
torch::Tensor pixelTensor(const VitConfig& c, const HostTensor& image);

// The learned LOT pivots of a layer as the core operator takes them: LotParams with pivot_init = file.
// Used when the spec leaves the pivots to `auto` and names no pivots file (r is the learned pivots' count).
std::optional<std::pair<torch::Tensor, torch::Tensor>> learnedPivots(const OperatorSpec& spec, VitLayer& layer);

// The spec with a `layer` parameter left at −1 (asap:compiled=DIR) set to the layer it replaces
// (docs/operators/asap.md#compiled-models); other specs resolved unchanged.
OperatorSpec atLayer(const OperatorSpec& spec, int layer);

// One block's heads through a core registry operator, batch of one image: the CPU reference in double, or
// on the GPU all heads in one launch (runOperatorBatch).
class CoreAttention {
 public:
  CoreAttention(const OperatorSpec& spec, VitLayer& layer, Feedback& feedback, DeviceChoice device)
      : spec_(OperatorRegistry::builtin().resolve(spec.family, spec.params)), pivots_(learnedPivots(spec_, layer)),
        feedback_(feedback), device_(device) {
    if (!pivots_) op_ = OperatorRegistry::builtin().create(spec_);
  }

  TorchAttention operator()(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    TorchAttention out{torch::zeros_like(v), torch::zeros({q.size(0), q.size(1), q.size(2), k.size(2)})};
    AttentionBatch<double> heads;
    for (int64_t h = 0; h < q.size(1); ++h)
      heads.push_back({toEigen(q[0][h]), toEigen(k[0][h]), toEigen(v[0][h]), std::nullopt});
    if (pivots_) {  // learned LOT pivots differ per head: the heads are different operators
      for (size_t h = 0; h < heads.size(); ++h) results.push_back(lotWithPivots(heads[h], int64_t(h)));
    } else {
      results = runOperatorBatch(*op_, heads, Precision::F64, device_, feedback_);
    }
    for (size_t h = 0; h < results.size(); ++h) {
      out.output[0][int64_t(h)].copy_(toTorch(*results[h].output));
      out.attention[0][int64_t(h)].copy_(toTorch(results[h].plan.dense()));
    }
    return out;
  }

  const OperatorSpec& spec() const { return spec_; }
  std::vector<PlanResult<double>> results;  // per head

 private:
  PlanResult<double> lotWithPivots(const AttentionInput<double>& input, int64_t head);

  OperatorSpec spec_;
  std::optional<std::pair<torch::Tensor, torch::Tensor>> pivots_;
  std::unique_ptr<Operator> op_;
  Feedback& feedback_;
  DeviceChoice device_;
};

}  // namespace tl
