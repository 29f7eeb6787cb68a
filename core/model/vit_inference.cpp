#include "model/vit_inference.h"

#include <algorithm>

#include "common/errors.h"
#include "model/core_attention.h"
#include "model/torchscript.h"
#include "model/vit.h"
#include "ops/lot/lot.h"
#include "session/engine.h"

namespace tl {
namespace {

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

VitRunner::VitRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

VitRunner VitRunner::open(const std::string& path, const VitImportOptions& options, Feedback& feedback) {
  useLibTorchForTorchScript();
  auto impl = std::make_unique<Impl>();
  impl->model = makeVitModel(openVitCheckpoint(path, options), "checkpoint", feedback);
  return VitRunner(std::move(impl));
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
