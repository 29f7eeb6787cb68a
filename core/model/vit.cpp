#include "model/vit.h"

#include "common/errors.h"
#include "ops/lot/lot.h"
#include "vit/weight_names.h"

namespace tl {
namespace {

// An empty module that only gives its children a name prefix ("vit", "encoder", "attention", ...), so the
// parameter names follow HF's module tree without a class per level.
std::shared_ptr<torch::nn::Module> scope(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

torch::nn::LayerNorm layerNorm(int64_t width, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(eps));
}

torch::nn::Linear linear(int64_t in, int64_t out, bool bias = true) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

}  // namespace

VitLayerImpl::VitLayerImpl(const VitConfig& c)
    : numHeads_(c.numHeads), headDim_(c.headDim), tanhGelu_(c.hiddenAct != "gelu") {
  const int64_t D = c.hiddenSize, inner = c.innerSize(), I = c.intermediateSize;
  layernormBefore_ = register_module("layernorm_before", layerNorm(D, c.layerNormEps));
  const auto attention = scope(*this, "attention");
  const auto self = scope(*attention, "attention");
  query_ = self->register_module("query", linear(D, inner, c.qkvBias));
  key_ = self->register_module("key", linear(D, inner, c.qkvBias));
  value_ = self->register_module("value", linear(D, inner, c.qkvBias));
  normaliser_ = self->register_module("normaliser", makeTorchNormaliser(c.attention, c.numHeads, c.headDim));
  attentionDense_ = scope(*attention, "output")->register_module("dense", linear(inner, D));
  layernormAfter_ = register_module("layernorm_after", layerNorm(D, c.layerNormEps));
  intermediate_ = scope(*this, "intermediate")->register_module("dense", linear(D, I));
  outputDense_ = scope(*this, "output")->register_module("dense", linear(I, D));
}

torch::Tensor VitLayerImpl::heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), numHeads_, headDim_}).permute({0, 2, 1, 3});
}

torch::Tensor VitLayerImpl::forward(const torch::Tensor& hidden, VitAttentionTrace* trace,
                                    const AttentionOverride* override, const rankdecay::BlockSwitches* block) {
  const torch::Tensor x = layernormBefore_(hidden);
  const torch::Tensor q = heads(query_(x)), k = heads(key_(x)), v = heads(value_(x));
  const TorchAttention mixed = override ? (*override)(q, k, v) : normaliser_->forward(q, k, v, trace != nullptr);
  if (trace) *trace = {q, k, v, mixed.attention, mixed.output};
  const torch::Tensor context = mixed.output.permute({0, 2, 1, 3}).reshape({hidden.size(0), hidden.size(1), -1});
  const torch::Tensor attention = attentionDense_(context);
  const torch::Tensor h = !block || block->attentionSkip ? hidden + attention : attention;
  if (block && !block->ffn) return h;
  const torch::Tensor ffn = outputDense_(torch::gelu(intermediate_(layernormAfter_(h)), tanhGelu_ ? "tanh" : "none"));
  return !block || block->ffnSkip ? h + ffn : ffn;
}

VitModelImpl::VitModelImpl(VitConfig config, VitWeightsStart start) : config_(std::move(config)) {
  validateVitConfig(config_, "ViT config");
  const VitConfig& c = config_;
  const int64_t D = c.hiddenSize;
  const auto vit = scope(*this, "vit");
  const auto embeddings = scope(*vit, "embeddings");
  const bool random = start == VitWeightsStart::Random;
  // HF's _init_weights: N(0, 0.02) for the embeddings and every Linear/Conv2d weight, zero biases.
  const auto embedding = [random](std::vector<int64_t> shape) {
    return random ? torch::randn(shape) * 0.02 : torch::empty(shape);
  };
  clsToken_ = embeddings->register_parameter("cls_token", embedding({1, 1, D}));
  positions_ = embeddings->register_parameter("position_embeddings", embedding({1, c.numTokens(), D}));
  projection_ = scope(*embeddings, "patch_embeddings")
                    ->register_module("projection", torch::nn::Conv2d(torch::nn::Conv2dOptions(c.numChannels, D, c.patchSize)
                                                                          .stride(c.patchSize)));
  const auto layerList = scope(*scope(*vit, "encoder"), "layer");
  for (int i = 0; i < c.numLayers; ++i) layers_.push_back(layerList->register_module(std::to_string(i), VitLayer(c)));
  layernorm_ = vit->register_module("layernorm", layerNorm(D, c.layerNormEps));
  classifier_ = register_module("classifier", linear(D, c.numLabels()));
  if (!random) return;

  torch::NoGradGuard noGrad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* l = m->as<torch::nn::Linear>()) {
      l->weight.normal_(0, 0.02);
      if (l->bias.defined()) l->bias.zero_();
    } else if (auto* conv = m->as<torch::nn::Conv2d>()) {
      conv->weight.normal_(0, 0.02);
      conv->bias.zero_();
    }
  }
}

torch::Tensor VitModelImpl::embed(const torch::Tensor& pixels) {
  const VitConfig& c = config_;
  if (pixels.dim() != 4 || pixels.size(1) != c.numChannels || pixels.size(2) != c.imageSize ||
      pixels.size(3) != c.imageSize)
    throw InvalidArgument("ViT input of shape " + c10::str(pixels.sizes()) + " does not fit the model: expected [B, " +
                          std::to_string(c.numChannels) + ", " + std::to_string(c.imageSize) + ", " +
                          std::to_string(c.imageSize) + "]");
  const torch::Tensor patches = projection_(pixels).flatten(2).transpose(1, 2);  // [B, patches, D], row-major grid
  return torch::cat({clsToken_.expand({pixels.size(0), -1, -1}), patches}, 1) + positions_;
}

torch::Tensor VitModelImpl::classify(const torch::Tensor& hidden) {
  // HF normalises every token and reads [CLS]; vit-pytorch's pool='mean' averages first (mlp_head = LN + Linear).
  const torch::Tensor pooled = config_.pool == VitPooling::Mean ? hidden.mean(1) : hidden.select(1, 0);
  return classifier_(layernorm_(pooled));
}

torch::Tensor VitModelImpl::forward(const torch::Tensor& pixels) {
  torch::Tensor hidden = embed(pixels);
  for (auto& layer : layers_) hidden = layer->forward(hidden);
  return classify(hidden);
}

TensorMap VitModelImpl::state() const {
  TensorMap out;
  for (const auto& p : named_parameters()) {
    const torch::Tensor values = p.value().detach().to(torch::kFloat32).contiguous();
    HostTensor t;
    t.shape.assign(values.sizes().begin(), values.sizes().end());
    t.values.assign(values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
    out[p.key()] = std::move(t);
  }
  return out;
}

void VitModelImpl::load(const TensorMap& tensors, const std::string& source) {
  checkVitTensors(tensors, config_, source);
  torch::NoGradGuard noGrad;
  for (auto& p : named_parameters()) {
    const HostTensor& t = tensors.at(p.key());
    p.value().copy_(torch::from_blob(const_cast<float*>(t.values.data()), t.shape, torch::kFloat32));
  }
}

void VitModelImpl::load(const StoredTensorMap& tensors, const std::string& source, Feedback& feedback) {
  checkVitTensors(tensors, config_, source);
  const double total = double(std::max<int64_t>(totalElements(tensors), 1));
  int64_t done = 0;
  torch::NoGradGuard noGrad;
  for (auto& p : named_parameters()) {
    feedback.throwIfCanceled();
    const StoredTensor& t = tensors.at(p.key());
    // Parameters are contiguous float32 of the checked shape: their storage is the tensor's final buffer.
    t.decodeInto(p.value().data_ptr<float>());
    done += t.numel();
    feedback.setProgress(double(done) / total, "loading weights");
  }
}

VitModel makeVitModel(const VitCheckpointFile& checkpoint, const std::string& source, Feedback& feedback) {
  VitModel model(checkpoint.config, VitWeightsStart::FromCheckpoint);
  model->load(checkpoint.tensors, source, feedback);
  model->eval();
  return model;
}

VitModel makeVitModel(const VitCheckpoint& checkpoint, const std::string& source) {
  VitModel model(checkpoint.config);
  model->load(checkpoint.tensors, source);
  model->eval();
  return model;
}

VitCheckpoint checkpointOf(const VitModel& model) {
  VitCheckpoint c{model->config(), model->state()};
  // LOT pivots live in the weights now: a pivots or mass_logits file that initialised them is not needed
  // (and may be gone) when the checkpoint is read again, so the config keeps only their count.
  if (c.config.attention.family == "lot") {
    ParamSet& params = c.config.attention.params;
    if (getOptionalString(params, "pivots")) params["r"] = (long long)LotParams::from(params).r;
    params.erase("pivots");
    params.erase("mass_logits");
    if (getString(params, "pivot_init") == "file") params["pivot_init"] = std::string("auto");
  }
  return c;
}

}  // namespace tl
