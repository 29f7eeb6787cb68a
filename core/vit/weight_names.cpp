#include "vit/weight_names.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "ops/lot/lot.h"
#include "vit/vit_checkpoint.h"

namespace tl {
namespace {

using Shape = std::vector<int64_t>;

std::string shapeText(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string layerPrefix(int i) { return "vit.encoder.layer." + std::to_string(i) + "."; }

// ---------------------------------------------------------------------------------------------------------
// vit-pytorch → HF

// Reads the tensors of one state dict by name, checking shapes, and remembers which ones were used so the
// leftovers can be reported.
class StateDictReader {
 public:
  StateDictReader(const TensorMap& tensors, std::string source) : tensors_(tensors), source_(std::move(source)) {}

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }

  const HostTensor& get(const std::string& name) {
    const auto it = tensors_.find(name);
    if (it == tensors_.end())
      throw FileError(source_ + ": tensor '" + name + "' is missing (expected in a vit-pytorch ViT state dict)");
    used_.insert(name);
    return it->second;
  }

  const HostTensor& get(const std::string& name, const Shape& shape) {
    const HostTensor& t = get(name);
    if (t.shape != shape)
      throw FileError(source_ + ": tensor '" + name + "' has shape " + shapeText(t.shape) + ", expected " +
                      shapeText(shape));
    return t;
  }

  // The leading size of `name` after checking its rank.
  int64_t size(const std::string& name, size_t rank, size_t axis) {
    const HostTensor& t = get(name);
    if (t.shape.size() != rank)
      throw FileError(source_ + ": tensor '" + name + "' has shape " + shapeText(t.shape) + ", expected " +
                      std::to_string(rank) + " dimensions");
    return t.shape[axis];
  }

  void rejectUnused() const {
    for (const auto& [name, t] : tensors_)
      if (!used_.count(name))
        throw FileError(source_ + ": unexpected tensor '" + name + "' " + shapeText(t.shape) +
                        " (not part of the vit-pytorch ViT layout this converter reads)");
  }

 private:
  const TensorMap& tensors_;
  std::string source_;
  std::set<std::string> used_;
};

void rejectNewerLayouts(const TensorMap& sd, const std::string& source) {
  for (const char* marker : {"to_patch_embedding.2.weight", "transformer.norm.weight", "transformer.layers.0.0.to_qkv.weight"})
    if (sd.count(marker))
      throw FileError(source + ": tensor '" + marker +
                      "' shows the newer vit-pytorch layout (LayerNorm + Linear + LayerNorm patch embedding, norms "
                      "inside Attention and FeedForward, transformer.norm). It has no Hugging Face ViT equivalent; only "
                      "the older layout (Rearrange + Linear patch embedding, PreNorm blocks, mlp_head = LayerNorm + "
                      "Linear, as in the Sinkformer and ESPFormer code) can be converted");
}

int countLayers(const TensorMap& sd) {
  int depth = 0;
  while (sd.count("transformer.layers." + std::to_string(depth) + ".0.fn.to_qkv.weight")) ++depth;
  return depth;
}

// The side of a square grid of `value` cells, or 0 when there is none. Values below 1 (an empty pos_embedding) and
// beyond int's squares are no grid; checked first, since sqrt of a negative count rounded to int64 overflowed (found
// by the fuzz campaign).
int exactRoot(int64_t value) {
  if (value < 1 || value > int64_t(46340) * 46340) return 0;
  const auto root = int64_t(std::llround(std::sqrt(double(value))));
  return root * root == value ? int(root) : 0;
}

FileError missingOption(const std::string& source, const std::string& what) {
  return FileError(source + ": " + what + " (give it in the side file or as an argument)");
}

void checkGiven(const std::optional<int>& given, int64_t actual, const char* name, const std::string& source) {
  if (given && *given != actual)
    throw FileError(source + ": " + name + " = " + std::to_string(*given) + " was given, but the weights have " +
                    std::to_string(actual));
}

// Patch size and channels from the patch projection's input width p·p·C (vit-pytorch: channels default 3).
std::pair<int, int> patchAndChannels(int64_t patchDim, const VitPytorchOptions& o, const std::string& source) {
  if (o.patchSize) {
    const int64_t area = int64_t(*o.patchSize) * *o.patchSize;
    if (patchDim % area != 0)
      throw FileError(source + ": patch_size = " + std::to_string(*o.patchSize) + " does not fit the patch " +
                      "projection's input width " + std::to_string(patchDim) + " (= patch_size² · channels)");
    checkGiven(o.channels, patchDim / area, "channels", source);
    return {*o.patchSize, int(patchDim / area)};
  }
  const int channels = o.channels.value_or(3);
  const int patch = patchDim % channels == 0 ? exactRoot(patchDim / channels) : 0;
  if (patch == 0)
    throw missingOption(source, "patch_size is missing: the patch projection's input width " + std::to_string(patchDim) +
                                    " is not patch_size² · " + std::to_string(channels) + " channels for any patch_size");
  return {patch, channels};
}

// Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)') + Linear [D, p·p·C] equals a stride-p convolution
// with weight[o, c, p1, p2] = W[o, (p1·p + p2)·C + c].
HostTensor patchLinearToConv(const HostTensor& W, int patch, int channels) {
  const int64_t D = W.shape[0];
  HostTensor conv;
  conv.shape = {D, channels, patch, patch};
  conv.stored = W.stored;
  conv.values.resize(W.values.size());
  for (int64_t o = 0; o < D; ++o)
    for (int c = 0; c < channels; ++c)
      for (int p1 = 0; p1 < patch; ++p1)
        for (int p2 = 0; p2 < patch; ++p2)
          conv.values[size_t(((o * channels + c) * patch + p1) * patch + p2)] =
              W.values[size_t(o * W.shape[1] + (p1 * patch + p2) * channels + c)];
  return conv;
}

HostTensor rows(const HostTensor& t, int64_t first, int64_t count) {
  HostTensor out;
  const int64_t width = t.shape[1];
  out.shape = {count, width};
  out.stored = t.stored;
  out.values.assign(t.values.begin() + first * width, t.values.begin() + (first + count) * width);
  return out;
}

HostTensor identityLinear(int64_t n) {
  HostTensor t;
  t.shape = {n, n};
  t.values.assign(size_t(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i) t.values[size_t(i * n + i)] = 1.0f;
  return t;
}

HostTensor zeros(int64_t n) {
  HostTensor t;
  t.shape = {n};
  t.values.assign(size_t(n), 0.0f);
  return t;
}

VitConfig configFromShapes(StateDictReader& sd, int depth, const VitPytorchOptions& o, const std::string& source) {
  VitConfig c;
  c.hiddenSize = int(sd.size("cls_token", 3, 2));
  const int64_t patchDim = sd.size("to_patch_embedding.1.weight", 2, 1);
  const int64_t inner = sd.size("transformer.layers.0.0.fn.to_qkv.weight", 2, 0) / 3;
  c.intermediateSize = int(sd.size("transformer.layers.0.1.fn.net.0.weight", 2, 0));
  const int64_t numClasses = sd.size("mlp_head.1.weight", 2, 0);
  checkGiven(o.dim, c.hiddenSize, "dim", source);
  checkGiven(o.depth, depth, "depth", source);
  checkGiven(o.mlpDim, c.intermediateSize, "mlp_dim", source);
  checkGiven(o.numClasses, numClasses, "num_classes", source);

  if (!o.heads && !o.dimHead)
    throw missingOption(source, "heads is missing: to_qkv holds heads·dim_head = " + std::to_string(inner) +
                                    " features per projection, and the weights cannot tell how they split");
  c.numHeads = o.heads ? *o.heads : int(inner / *o.dimHead);
  c.headDim = o.dimHead ? *o.dimHead : int(inner / *o.heads);
  if (int64_t(c.numHeads) * c.headDim != inner)
    throw FileError(source + ": heads = " + std::to_string(c.numHeads) + " and dim_head = " + std::to_string(c.headDim) +
                    " do not give the " + std::to_string(inner) + " features of each to_qkv projection");

  std::tie(c.patchSize, c.numChannels) = patchAndChannels(patchDim, o, source);
  const int64_t numPatches = sd.size("pos_embedding", 3, 1) - 1;
  const int grid = exactRoot(numPatches);
  if (grid == 0)
    throw FileError(source + ": pos_embedding has " + std::to_string(numPatches) +
                    " patch positions, not a square grid (only square images are supported)");
  c.imageSize = grid * c.patchSize;
  checkGiven(o.imageSize, c.imageSize, "image_size", source);

  c.numLayers = depth;
  c.qkvBias = false;  // to_qkv has no bias
  c.layerNormEps = o.layerNormEps.value_or(1e-5);
  c.hiddenAct = "gelu";  // nn.GELU(): the exact (erf) form
  if (o.pool && *o.pool != "cls" && *o.pool != "mean")
    throw FileError(source + ": pool = '" + *o.pool + "' is not valid; expected cls or mean");
  c.pool = o.pool.value_or("cls") == "mean" ? VitPooling::Mean : VitPooling::Cls;
  try {
    c.attention = OperatorRegistry::builtin().parse(o.attention.value_or("softmax"));
  } catch (const InvalidArgument& e) {
    throw FileError(source + ": attention is not a valid operator: " + e.what());
  }
  if (!o.labels.empty() && int64_t(o.labels.size()) != numClasses)
    throw FileError(source + ": " + std::to_string(o.labels.size()) + " labels were given, but mlp_head has " +
                    std::to_string(numClasses) + " classes");
  c.labels = o.labels.empty() ? defaultVitLabels(int(numClasses)) : o.labels;
  if (o.imageMean) c.normalisation.mean = *o.imageMean;
  if (o.imageStd) c.normalisation.std = *o.imageStd;
  validateVitConfig(c, source);
  return c;
}

void copyLinear(StateDictReader& sd, const std::string& from, const std::string& to, const Shape& weight, TensorMap& out) {
  out[to + ".weight"] = sd.get(from + ".weight", weight);
  out[to + ".bias"] = sd.get(from + ".bias", {weight[0]});
}

void convertLayer(StateDictReader& sd, const VitConfig& c, int i, TensorMap& out) {
  const int64_t D = c.hiddenSize, inner = c.innerSize(), I = c.intermediateSize;
  const std::string from = "transformer.layers." + std::to_string(i) + ".", to = layerPrefix(i);
  copyLinear(sd, from + "0.norm", to + "layernorm_before", {D}, out);
  const HostTensor& qkv = sd.get(from + "0.fn.to_qkv.weight", {3 * inner, D});
  // to_qkv(x).chunk(3, dim=-1): rows [0, inner) are Q, then K, then V; heads are contiguous (h d) inside each.
  out[to + "attention.attention.query.weight"] = rows(qkv, 0, inner);
  out[to + "attention.attention.key.weight"] = rows(qkv, inner, inner);
  out[to + "attention.attention.value.weight"] = rows(qkv, 2 * inner, inner);
  if (sd.has(from + "0.fn.to_out.0.weight")) {
    copyLinear(sd, from + "0.fn.to_out.0", to + "attention.output.dense", {D, inner}, out);
  } else if (c.numHeads == 1 && inner == D) {
    // vit-pytorch's project_out = not (heads == 1 and dim_head == dim): to_out is nn.Identity.
    out[to + "attention.output.dense.weight"] = identityLinear(D);
    out[to + "attention.output.dense.bias"] = zeros(D);
  } else {
    sd.get(from + "0.fn.to_out.0.weight");  // throws: missing
  }
  copyLinear(sd, from + "1.norm", to + "layernorm_after", {D}, out);
  copyLinear(sd, from + "1.fn.net.0", to + "intermediate.dense", {I, D}, out);
  copyLinear(sd, from + "1.fn.net.3", to + "output.dense", {D, I}, out);
}

// ---------------------------------------------------------------------------------------------------------
// Side file

std::optional<int> optionalInt(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) return std::nullopt;
  const auto& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1 << 30))
    throw FileError(source + ": field '" + key + "' must be a positive integer, not " + v.dump());
  return v.get<int>();
}

std::optional<std::string> optionalString(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) return std::nullopt;
  if (!j.at(key).is_string()) throw FileError(source + ": field '" + key + "' must be a string");
  return j.at(key).get<std::string>();
}

std::optional<std::vector<double>> optionalNumbers(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) return std::nullopt;
  std::vector<double> out;
  const auto& v = j.at(key);
  if (v.is_number()) out.push_back(v.get<double>());
  if (v.is_array())
    for (const auto& x : v)
      if (x.is_number()) out.push_back(x.get<double>());
  if (out.empty() || (v.is_array() && out.size() != v.size()))
    throw FileError(source + ": field '" + key + "' must be a number or a list of numbers");
  return out;
}

}  // namespace

std::map<std::string, std::vector<int64_t>> vitTensorShapes(const VitConfig& c) {
  const int64_t D = c.hiddenSize, inner = c.innerSize(), I = c.intermediateSize, P = c.patchSize;
  std::map<std::string, Shape> shapes = {
      {"vit.embeddings.cls_token", {1, 1, D}},
      {"vit.embeddings.position_embeddings", {1, c.numTokens(), D}},
      {"vit.embeddings.patch_embeddings.projection.weight", {D, c.numChannels, P, P}},
      {"vit.embeddings.patch_embeddings.projection.bias", {D}},
      {"vit.layernorm.weight", {D}},
      {"vit.layernorm.bias", {D}},
      {"classifier.weight", {c.numLabels(), D}},
      {"classifier.bias", {c.numLabels()}},
  };
  for (int i = 0; i < c.numLayers; ++i) {
    const std::string p = layerPrefix(i);
    for (const char* norm : {"layernorm_before", "layernorm_after"}) {
      shapes[p + norm + ".weight"] = {D};
      shapes[p + norm + ".bias"] = {D};
    }
    for (const char* proj : {"query", "key", "value"}) {
      shapes[p + "attention.attention." + proj + ".weight"] = {inner, D};
      if (c.qkvBias) shapes[p + "attention.attention." + proj + ".bias"] = {inner};
    }
    shapes[p + "attention.output.dense.weight"] = {D, inner};
    shapes[p + "attention.output.dense.bias"] = {D};
    shapes[p + "intermediate.dense.weight"] = {I, D};
    shapes[p + "intermediate.dense.bias"] = {I};
    shapes[p + "output.dense.weight"] = {D, I};
    shapes[p + "output.dense.bias"] = {D};
    if (c.attention.family == "lot") {
      const int64_t r = LotParams::from(c.attention.params).r;
      shapes[p + "attention.attention.normaliser.pivots"] = {c.numHeads, r, c.headDim};
      shapes[p + "attention.attention.normaliser.mass_logits"] = {c.numHeads, r};
    }
  }
  return shapes;
}

namespace {

// One check for decoded and for still-stored tensors: both carry a shape under their name.
template <class Tensors>
void checkShapes(const Tensors& tensors, const VitConfig& config, const std::string& source) {
  const auto expected = vitTensorShapes(config);
  for (const auto& [name, shape] : expected) {
    const auto it = tensors.find(name);
    if (it == tensors.end())
      throw FileError(source + ": tensor '" + name + "' " + shapeText(shape) + " is missing for this config (" +
                      std::to_string(config.numLayers) + " layers, attention " + config.attention.toString() + ")");
    if (it->second.shape != shape)
      throw FileError(source + ": tensor '" + name + "' has shape " + shapeText(it->second.shape) +
                      ", but the config needs " + shapeText(shape));
  }
  for (const auto& entry : tensors)
    if (!expected.count(entry.first))
      throw FileError(source + ": unexpected tensor '" + entry.first + "' " + shapeText(entry.second.shape) +
                      " (not part of a ViTForImageClassification with this config)");
}

template <class Tensors>
bool hasVitPytorchNames(const Tensors& tensors) {
  for (const auto& entry : tensors)
    for (const char* prefix : {"to_patch_embedding.", "transformer.layers.", "mlp_head."})
      if (entry.first.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

void checkVitTensors(const TensorMap& tensors, const VitConfig& config, const std::string& source) {
  checkShapes(tensors, config, source);
}

void checkVitTensors(const StoredTensorMap& tensors, const VitConfig& config, const std::string& source) {
  checkShapes(tensors, config, source);
}

VitPytorchOptions readVitPytorchSideFile(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(readFile(path));
  } catch (const nlohmann::json::exception& e) {
    throw FileError(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw FileError(path + ": expected a JSON object of vit-pytorch ViT(...) arguments");
  VitPytorchOptions o;
  o.heads = optionalInt(j, "heads", path);
  o.dimHead = optionalInt(j, "dim_head", path);
  o.patchSize = optionalInt(j, "patch_size", path);
  o.channels = optionalInt(j, "channels", path);
  o.imageSize = optionalInt(j, "image_size", path);
  o.dim = optionalInt(j, "dim", path);
  o.depth = optionalInt(j, "depth", path);
  o.mlpDim = optionalInt(j, "mlp_dim", path);
  o.numClasses = optionalInt(j, "num_classes", path);
  o.pool = optionalString(j, "pool", path);
  o.attention = optionalString(j, "attention", path);
  if (const auto eps = optionalNumbers(j, "layer_norm_eps", path)) o.layerNormEps = eps->front();
  if (j.contains("labels")) {
    const auto& labels = j.at("labels");
    if (!labels.is_array()) throw FileError(path + ": field 'labels' must be a list of names");
    for (const auto& name : labels) {
      if (!name.is_string()) throw FileError(path + ": field 'labels' must hold strings");
      o.labels.push_back(name.get<std::string>());
    }
  }
  o.imageMean = optionalNumbers(j, "image_mean", path);
  o.imageStd = optionalNumbers(j, "image_std", path);
  return o;
}

VitPytorchOptions mergeOptions(const VitPytorchOptions& primary, const VitPytorchOptions& fallback) {
  VitPytorchOptions o = primary;
  auto fill = [](auto& into, const auto& from) {
    if (!into) into = from;
  };
  fill(o.heads, fallback.heads);
  fill(o.dimHead, fallback.dimHead);
  fill(o.patchSize, fallback.patchSize);
  fill(o.channels, fallback.channels);
  fill(o.imageSize, fallback.imageSize);
  fill(o.dim, fallback.dim);
  fill(o.depth, fallback.depth);
  fill(o.mlpDim, fallback.mlpDim);
  fill(o.numClasses, fallback.numClasses);
  fill(o.pool, fallback.pool);
  fill(o.attention, fallback.attention);
  fill(o.layerNormEps, fallback.layerNormEps);
  fill(o.imageMean, fallback.imageMean);
  fill(o.imageStd, fallback.imageStd);
  if (o.labels.empty()) o.labels = fallback.labels;
  return o;
}

bool isVitPytorchLayout(const TensorMap& tensors) { return hasVitPytorchNames(tensors); }

bool isVitPytorchLayout(const StoredTensorMap& tensors) { return hasVitPytorchNames(tensors); }

VitCheckpoint convertVitPytorch(const TensorMap& stateDict, const VitPytorchOptions& options, const std::string& source) {
  rejectNewerLayouts(stateDict, source);
  const int depth = countLayers(stateDict);
  if (depth == 0)
    throw FileError(source + ": tensor 'transformer.layers.0.0.fn.to_qkv.weight' is missing; this is not a "
                             "vit-pytorch ViT state dict");
  StateDictReader sd(stateDict, source);
  VitCheckpoint out;
  VitConfig& c = out.config;
  c = configFromShapes(sd, depth, options, source);
  const int64_t D = c.hiddenSize;
  TensorMap& t = out.tensors;
  t["vit.embeddings.cls_token"] = sd.get("cls_token", {1, 1, D});
  t["vit.embeddings.position_embeddings"] = sd.get("pos_embedding", {1, c.numTokens(), D});
  const int64_t patchDim = int64_t(c.patchSize) * c.patchSize * c.numChannels;
  t["vit.embeddings.patch_embeddings.projection.weight"] =
      patchLinearToConv(sd.get("to_patch_embedding.1.weight", {D, patchDim}), c.patchSize, c.numChannels);
  t["vit.embeddings.patch_embeddings.projection.bias"] = sd.get("to_patch_embedding.1.bias", {D});
  for (int i = 0; i < depth; ++i) convertLayer(sd, c, i, t);
  copyLinear(sd, "mlp_head.0", "vit.layernorm", {D}, t);
  copyLinear(sd, "mlp_head.1", "classifier", {c.numLabels(), D}, t);
  sd.rejectUnused();
  checkVitTensors(t, c, source);
  return out;
}

}  // namespace tl
