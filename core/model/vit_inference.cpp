#include "model/vit_inference.h"

#include <algorithm>

#include "common/errors.h"
#include "model/torchscript.h"
#include "model/vit.h"
#include "ops/lot/lot.h"
#include "session/engine.h"

namespace tl {
namespace {

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

// The learned LOT pivots of a layer as the core operator takes them: LotParams with pivot_init = file.
// Used when the spec leaves the pivots to `auto` and names no pivots file (r is the learned pivots' count).
std::optional<std::pair<torch::Tensor, torch::Tensor>> learnedPivots(const OperatorSpec& spec, VitLayer& layer) {
  if (spec.family != "lot" || getString(spec.params, "pivot_init") != "auto" || getOptionalString(spec.params, "pivots"))
    return std::nullopt;
  const auto params = layer->normaliser()->named_parameters();
  if (!params.contains("pivots")) return std::nullopt;
  return std::make_pair(params["pivots"], params["mass_logits"]);
}

// A family with a `layer` parameter left at −1 (asap:compiled=DIR) runs with the layer it replaces
// (docs/operators/asap.md#compiled-models).
OperatorSpec atLayer(const OperatorSpec& spec, int layer) {
  OperatorSpec resolved = OperatorRegistry::builtin().resolve(spec.family, spec.params);
  const auto it = resolved.params.find("layer");
  if (it != resolved.params.end() && it->second == ParamValue(-1LL)) it->second = ParamValue((long long)layer);
  return resolved;
}

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
  PlanResult<double> lotWithPivots(const AttentionInput<double>& input, int64_t head) {
    LotParams p = LotParams::from(spec_.params);
    p.pivotInit = PivotInit::File;
    p.pivots = toEigen(pivots_->first[head]);
    p.r = int(p.pivots.rows());
    if (!getOptionalString(spec_.params, "mass_logits")) p.massLogits = toEigenVector(pivots_->second[head]);
    return lotAttention(input, p, feedback_);
  }

  OperatorSpec spec_;
  std::optional<std::pair<torch::Tensor, torch::Tensor>> pivots_;
  std::unique_ptr<Operator> op_;
  Feedback& feedback_;
  DeviceChoice device_;
};

void fillHeads(const VitAttentionTrace& t, VitLayerTrace& layer) {
  for (int64_t h = 0; h < t.q.size(1); ++h) {
    VitHeadTrace head;
    head.input.Q = toEigen(t.q[0][h]);
    head.input.K = toEigen(t.k[0][h]);
    head.input.V = toEigen(t.v[0][h]);
    head.attention = toEigen(t.attention[0][h]);
    head.output = toEigen(t.output[0][h]);
    layer.heads.push_back(std::move(head));
  }
}

// Runs layers fromLayer.. on `hidden` [1, n, D], appending their traces, then the classifier.
void runLayers(VitModel& model, torch::Tensor hidden, int fromLayer, const std::map<int, OperatorSpec>& swaps,
               Feedback& feedback, VitTrace& trace, DeviceChoice device = DeviceChoice::Cpu) {
  const int L = model->config().numLayers;
  for (int l = fromLayer; l < L; ++l) {
    feedback.throwIfCanceled();
    VitLayer& layer = model->layer(l);
    VitAttentionTrace attention;
    VitLayerTrace layerTrace;
    const auto swap = swaps.find(l);
    if (swap != swaps.end()) {
      CoreAttention core(atLayer(swap->second, l), layer, feedback, device);
      const AttentionOverride override = [&core](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
        return core(q, k, v);
      };
      hidden = layer->forward(hidden, &attention, &override);
      layerTrace.op = core.spec();
      layerTrace.swapped = true;
      fillHeads(attention, layerTrace);
      for (size_t h = 0; h < core.results.size(); ++h) layerTrace.heads[h].core = std::move(core.results[h]);
    } else {
      hidden = layer->forward(hidden, &attention);
      layerTrace.op = layer->normaliser()->spec();
      fillHeads(attention, layerTrace);
    }
    layerTrace.output = toEigen(hidden[0]);
    trace.layers.push_back(std::move(layerTrace));
    feedback.setProgress(double(l + 1 - fromLayer) / double(L - fromLayer),
                         "model: " + std::to_string(l + 1) + " of " + std::to_string(L) + " layers");
  }
  trace.logits = toEigenVector(model->classify(hidden)[0]);
}

}  // namespace


struct VitRunner::Impl {
  VitModel model{nullptr};
};

VitRunner::VitRunner(const VitCheckpoint& checkpoint) : impl_(std::make_unique<Impl>()) {
  impl_->model = makeVitModel(checkpoint, "checkpoint");
}

VitRunner VitRunner::open(const std::string& path, const VitImportOptions& options) {
  useLibTorchForTorchScript();
  return VitRunner(readVitCheckpoint(path, options));
}

VitRunner::~VitRunner() = default;
VitRunner::VitRunner(VitRunner&&) noexcept = default;
VitRunner& VitRunner::operator=(VitRunner&&) noexcept = default;

const VitConfig& VitRunner::config() const { return impl_->model->config(); }

VitCheckpoint VitRunner::checkpoint() const { return checkpointOf(impl_->model); }

VecD VitRunner::logits(const HostTensor& image) const {
  torch::NoGradGuard noGrad;
  return toEigenVector(impl_->model->forward(pixelTensor(config(), image))[0]);
}

VitTrace VitRunner::run(const HostTensor& image, Feedback& feedback) const {
  torch::NoGradGuard noGrad;
  const torch::Tensor hidden = impl_->model->embed(pixelTensor(config(), image));
  VitTrace trace;
  trace.embeddings = toEigen(hidden[0]);
  runLayers(impl_->model, hidden, 0, {}, feedback, trace);
  return trace;
}

VitTrace VitRunner::rerun(const VitTrace& base, int fromLayer, const std::map<int, OperatorSpec>& swaps,
                          Feedback& feedback, DeviceChoice device) const {
  const int L = config().numLayers;
  if (fromLayer < 0 || fromLayer >= L)
    throw InvalidArgument("rerun: layer " + std::to_string(fromLayer) + " does not exist; the model has layers 0.." +
                          std::to_string(L - 1));
  if (int(base.layers.size()) != L || base.embeddings.cols() != config().hiddenSize)
    throw InvalidArgument("rerun: the base trace does not come from this model");
  for (const auto& [layer, spec] : swaps)
    if (layer < fromLayer || layer >= L)
      throw InvalidArgument("rerun: a swap at layer " + std::to_string(layer) + " would not run; swaps must be in " +
                            std::to_string(fromLayer) + ".." + std::to_string(L - 1));
  torch::NoGradGuard noGrad;
  VitTrace trace;
  trace.embeddings = base.embeddings;
  trace.layers.assign(base.layers.begin(), base.layers.begin() + fromLayer);
  const MatD& entering = fromLayer == 0 ? base.embeddings : base.layers[size_t(fromLayer - 1)].output;
  runLayers(impl_->model, toTorch(entering).unsqueeze(0), fromLayer, swaps, feedback, trace, device);
  return trace;
}

}  // namespace tl
