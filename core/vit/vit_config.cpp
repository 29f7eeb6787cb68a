#include "vit/vit_config.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "io/atomic_file.h"

namespace tl {
namespace {

using nlohmann::json;

FileError fieldError(const std::string& source, const std::string& field, const std::string& what) {
  return FileError(source + ": field '" + field + "' " + what);
}

const json& required(const json& j, const std::string& field, const std::string& source) {
  if (!j.contains(field))
    throw fieldError(source, field, "is missing (a Hugging Face ViTConfig config.json needs it)");
  return j.at(field);
}

// Far above any ViT (ViT-22B: 48 layers, 6144 wide; ImageNet-21k: 21843 labels), and low enough that what a config
// implies (a name and shape per tensor, a string per label, patch counts in int) stays small: a corrupt or hostile
// config.json must fail here rather than make the loader allocate for a model no weight file holds.
int largestAllowed(const std::string& field) {
  static const std::map<std::string, int> limits = {
      {"num_hidden_layers", 1024}, {"num_attention_heads", 1024}, {"num_channels", 64},
      {"image_size", 1 << 14},     {"patch_size", 1 << 14},       {"num_labels", 1 << 20}};
  const auto it = limits.find(field);
  return it == limits.end() ? 1 << 20 : it->second;  // widths: hidden_size, intermediate_size, head_dim
}

int positiveInt(const json& value, const std::string& field, const std::string& source) {
  const int largest = largestAllowed(field);
  if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > largest)
    throw fieldError(source, field, "must be a positive integer no larger than " + std::to_string(largest) + ", not " +
                                        value.dump());
  return value.get<int>();
}

int requiredInt(const json& j, const std::string& field, const std::string& source) {
  return positiveInt(required(j, field, source), field, source);
}

std::vector<double> channelValues(const json& value, const std::string& field, const std::string& source) {
  std::vector<double> out;
  if (value.is_number()) out.push_back(value.get<double>());
  if (value.is_array())
    for (const auto& x : value) {
      if (!x.is_number()) throw fieldError(source, field, "must hold numbers, not " + x.dump());
      out.push_back(x.get<double>());
    }
  if (out.empty()) throw fieldError(source, field, "must be a number or a list with one number per channel");
  return out;
}

// id2label {"0": "cat", ...} must name every index 0..n−1 once.
std::vector<std::string> labelsFrom(const json& id2label, const std::string& source) {
  if (!id2label.is_object()) throw fieldError(source, "id2label", "must be an object {\"0\": \"name\", ...}");
  std::vector<std::string> labels(id2label.size());
  std::vector<bool> seen(id2label.size(), false);
  for (const auto& [key, name] : id2label.items()) {
    char* end = nullptr;
    const long index = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || index < 0 || size_t(index) >= labels.size() || seen[size_t(index)])
      throw fieldError(source, "id2label", "must have keys \"0\"..\"" + std::to_string(labels.size() - 1) +
                                               "\" once each; '" + key + "' is not one of them");
    if (!name.is_string()) throw fieldError(source, "id2label", "must map to label names (strings)");
    labels[size_t(index)] = name.get<std::string>();
    seen[size_t(index)] = true;
  }
  return labels;
}

// num_labels and id2label may both be present (HF writes only id2label); they must agree.
std::vector<std::string> readLabels(const json& j, const std::string& source) {
  if (j.contains("id2label")) {
    auto labels = labelsFrom(j.at("id2label"), source);
    if (j.contains("num_labels") && positiveInt(j.at("num_labels"), "num_labels", source) != int(labels.size()))
      throw fieldError(source, "num_labels", "disagrees with id2label, which names " + std::to_string(labels.size()) +
                                                 " labels");
    return labels;
  }
  if (j.contains("num_labels")) return defaultVitLabels(positiveInt(j.at("num_labels"), "num_labels", source));
  throw fieldError(source, "id2label", "is missing, and so is num_labels (the classifier's size needs one of them)");
}

void readTransportLensBlock(const json& block, VitConfig& c, const std::string& source) {
  if (!block.is_object()) throw fieldError(source, "transportlens", "must be an object");
  if (block.contains("attention")) {
    const auto& text = block.at("attention");
    if (!text.is_string()) throw fieldError(source, "transportlens.attention", "must be a string like \"sinkhorn:T=5\"");
    try {
      c.attention = OperatorRegistry::builtin().parse(text.get<std::string>());
    } catch (const InvalidArgument& e) {
      throw fieldError(source, "transportlens.attention", std::string("is not a valid operator: ") + e.what());
    }
  }
  if (block.contains("head_dim")) c.headDim = positiveInt(block.at("head_dim"), "transportlens.head_dim", source);
  if (block.contains("pool")) {
    const auto& pool = block.at("pool");
    if (pool == "cls")
      c.pool = VitPooling::Cls;
    else if (pool == "mean")
      c.pool = VitPooling::Mean;
    else
      throw fieldError(source, "transportlens.pool", "must be \"cls\" or \"mean\", not " + pool.dump());
  }
  if (block.contains("image_mean"))
    c.normalisation.mean = channelValues(block.at("image_mean"), "transportlens.image_mean", source);
  if (block.contains("image_std"))
    c.normalisation.std = channelValues(block.at("image_std"), "transportlens.image_std", source);
}

}  // namespace

VitConfig parseVitConfig(const std::string& text, const std::string& source, const ImageNormalisation& normalisation) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw FileError(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw FileError(source + ": expected a JSON object (a Hugging Face ViTConfig)");
  if (j.contains("model_type") && j.at("model_type") != "vit")
    throw fieldError(source, "model_type", "is " + j.at("model_type").dump() + "; only \"vit\" models are supported");

  VitConfig c;
  c.hiddenSize = requiredInt(j, "hidden_size", source);
  c.numLayers = requiredInt(j, "num_hidden_layers", source);
  c.numHeads = requiredInt(j, "num_attention_heads", source);
  c.intermediateSize = requiredInt(j, "intermediate_size", source);
  const json& imageSize = required(j, "image_size", source);
  if (imageSize.is_array()) throw fieldError(source, "image_size", "must be one integer (square images only)");
  c.imageSize = positiveInt(imageSize, "image_size", source);
  c.patchSize = requiredInt(j, "patch_size", source);
  if (j.contains("num_channels")) c.numChannels = positiveInt(j.at("num_channels"), "num_channels", source);
  if (j.contains("layer_norm_eps")) {
    if (!j.at("layer_norm_eps").is_number()) throw fieldError(source, "layer_norm_eps", "must be a number");
    c.layerNormEps = j.at("layer_norm_eps").get<double>();
  }
  if (j.contains("hidden_act")) {
    if (!j.at("hidden_act").is_string()) throw fieldError(source, "hidden_act", "must be a string such as \"gelu\"");
    c.hiddenAct = j.at("hidden_act").get<std::string>();
  }
  if (j.contains("qkv_bias")) {
    if (!j.at("qkv_bias").is_boolean()) throw fieldError(source, "qkv_bias", "must be true or false");
    c.qkvBias = j.at("qkv_bias").get<bool>();
  }
  c.labels = readLabels(j, source);
  c.attention = OperatorRegistry::builtin().parse("softmax");
  c.headDim = c.hiddenSize / c.numHeads;
  c.normalisation = normalisation;
  if (j.contains("transportlens")) readTransportLensBlock(j.at("transportlens"), c, source);
  if (c.headDim * c.numHeads != c.hiddenSize && !(j.contains("transportlens") && j.at("transportlens").contains("head_dim")))
    throw fieldError(source, "num_attention_heads", "= " + std::to_string(c.numHeads) + " does not divide hidden_size = " +
                                                        std::to_string(c.hiddenSize) + " (or give transportlens.head_dim)");
  validateVitConfig(c, source);
  return c;
}

std::vector<std::string> defaultVitLabels(int n) {
  std::vector<std::string> labels;
  for (int i = 0; i < n; ++i) labels.push_back("LABEL_" + std::to_string(i));
  return labels;
}

VitConfig readVitConfig(const std::string& path) { return parseVitConfig(readFile(path), path); }

void validateVitConfig(const VitConfig& c, const std::string& source) {
  if (!(c.hiddenSize > 0 && c.numLayers > 0 && c.numHeads > 0 && c.headDim > 0 && c.intermediateSize > 0 &&
        c.imageSize > 0 && c.patchSize > 0 && c.numChannels > 0))
    throw FileError(source + ": every size of a ViT config must be positive");
  if (c.imageSize % c.patchSize != 0)
    throw fieldError(source, "patch_size", "= " + std::to_string(c.patchSize) + " does not divide image_size = " +
                                               std::to_string(c.imageSize));
  if (!(c.layerNormEps > 0) || !std::isfinite(c.layerNormEps))
    throw fieldError(source, "layer_norm_eps", "must be a positive number");
  if (c.hiddenAct != "gelu" && c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu_pytorch_tanh")
    throw fieldError(source, "hidden_act", "= \"" + c.hiddenAct + "\" is not supported; use gelu, gelu_new or gelu_pytorch_tanh");
  if (c.labels.empty()) throw fieldError(source, "id2label", "must name at least one label");
  for (const auto* values : {&c.normalisation.mean, &c.normalisation.std}) {
    if (values->size() != 1 && int(values->size()) != c.numChannels)
      throw fieldError(source, "transportlens.image_mean/image_std",
                       "must have 1 or num_channels = " + std::to_string(c.numChannels) + " entries");
    for (double x : *values)
      if (!std::isfinite(x)) throw fieldError(source, "transportlens.image_mean/image_std", "must be finite");
  }
  for (double s : c.normalisation.std)
    if (!(s > 0)) throw fieldError(source, "transportlens.image_std", "must be positive");
}

std::string vitConfigJson(const VitConfig& c) {
  json id2label = json::object(), label2id = json::object();
  for (size_t i = 0; i < c.labels.size(); ++i) {
    id2label[std::to_string(i)] = c.labels[i];
    label2id[c.labels[i]] = i;
  }
  json j = {
      {"architectures", {"ViTForImageClassification"}},
      {"model_type", "vit"},
      {"hidden_size", c.hiddenSize},
      {"num_hidden_layers", c.numLayers},
      {"num_attention_heads", c.numHeads},
      {"intermediate_size", c.intermediateSize},
      {"hidden_act", c.hiddenAct},
      {"hidden_dropout_prob", 0.0},
      {"attention_probs_dropout_prob", 0.0},
      {"layer_norm_eps", c.layerNormEps},
      {"image_size", c.imageSize},
      {"patch_size", c.patchSize},
      {"num_channels", c.numChannels},
      {"qkv_bias", c.qkvBias},
      {"num_labels", c.numLabels()},
      {"id2label", id2label},
      {"label2id", label2id},
  };
  json block = {
      {"attention", c.attention.toString()},
      {"pool", c.pool == VitPooling::Mean ? "mean" : "cls"},
      {"image_mean", c.normalisation.mean},
      {"image_std", c.normalisation.std},
  };
  // HF derives the head width from hidden_size; write it only where it differs (such a model is not loadable
  // by `transformers`, but vit-pytorch models often have heads·dim_head ≠ dim).
  if (c.headDim * c.numHeads != c.hiddenSize) block["head_dim"] = c.headDim;
  j["transportlens"] = block;
  return j.dump(2) + "\n";
}

std::vector<float> normaliseImage(const VitConfig& c, const std::vector<int64_t>& shape, const std::vector<float>& pixels) {
  auto shapeText = [&] {
    std::string s;
    for (auto x : shape) s += (s.empty() ? "" : "×") + std::to_string(x);
    return s;
  };
  if (shape.size() != 3 || shape[0] != c.numChannels || shape[1] != c.imageSize || shape[2] != c.imageSize)
    throw InvalidArgument("image of shape " + shapeText() + " does not fit the model: expected C×H×W = " +
                          std::to_string(c.numChannels) + "×" + std::to_string(c.imageSize) + "×" +
                          std::to_string(c.imageSize) + " (resize first)");
  if (pixels.size() != size_t(shape[0] * shape[1] * shape[2]))
    throw InvalidArgument("image holds " + std::to_string(pixels.size()) + " values, but its shape " + shapeText() +
                          " needs " + std::to_string(shape[0] * shape[1] * shape[2]));
  const size_t plane = size_t(c.imageSize) * size_t(c.imageSize);
  std::vector<float> out(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) {
    if (!std::isfinite(pixels[i])) throw InvalidArgument("image pixel " + std::to_string(i) + " is not finite");
    const size_t ch = i / plane;
    const double mean = c.normalisation.mean.size() == 1 ? c.normalisation.mean[0] : c.normalisation.mean[ch];
    const double sd = c.normalisation.std.size() == 1 ? c.normalisation.std[0] : c.normalisation.std[ch];
    out[i] = float((double(pixels[i]) - mean) / sd);
  }
  return out;
}

}  // namespace tl
