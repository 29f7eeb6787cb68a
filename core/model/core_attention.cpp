#include "model/core_attention.h"

#include "ops/lot/lot.h"

namespace tl {

MatD toEigen(const torch::Tensor& matrix) {
  const torch::Tensor t = matrix.detach().to(torch::kFloat64).contiguous();
  return Eigen::Map<const MatD>(t.data_ptr<double>(), t.size(0), t.size(1));
}

VecD toEigenVector(const torch::Tensor& vector) {
  const torch::Tensor t = vector.detach().to(torch::kFloat64).contiguous();
  return Eigen::Map<const VecD>(t.data_ptr<double>(), t.size(0));
}

torch::Tensor toTorch(const MatD& m) {
  return torch::from_blob(const_cast<double*>(m.data()), {m.rows(), m.cols()}, torch::kFloat64).to(torch::kFloat32);
}

torch::Tensor pixelTensor(const VitConfig& c, const HostTensor& image) {
  std::vector<float> pixels = normaliseImage(c, image.shape, image.values);
  return torch::from_blob(pixels.data(), {1, c.numChannels, c.imageSize, c.imageSize}, torch::kFloat32).clone();
}

std::optional<std::pair<torch::Tensor, torch::Tensor>> learnedPivots(const OperatorSpec& spec, VitLayer& layer) {
  if (spec.family != "lot" || getString(spec.params, "pivot_init") != "auto" || getOptionalString(spec.params, "pivots"))
    return std::nullopt;
  const auto params = layer->normaliser()->named_parameters();
  if (!params.contains("pivots")) return std::nullopt;
  return std::make_pair(params["pivots"], params["mass_logits"]);
}

OperatorSpec atLayer(const OperatorSpec& spec, int layer) {
  OperatorSpec resolved = OperatorRegistry::builtin().resolve(spec.family, spec.params);
  const auto it = resolved.params.find("layer");
  if (it != resolved.params.end() && it->second == ParamValue(-1LL)) it->second = ParamValue((long long)layer);
  return resolved;
}

PlanResult<double> CoreAttention::lotWithPivots(const AttentionInput<double>& input, int64_t head) {
  LotParams p = LotParams::from(spec_.params);
  p.pivotInit = PivotInit::File;
  p.pivots = toEigen(pivots_->first[head]);
  p.r = int(p.pivots.rows());
  if (!getOptionalString(spec_.params, "mass_logits")) p.massLogits = toEigenVector(pivots_->second[head]);
  return lotAttention(input, p, feedback_);
}

}  // namespace tl
