#include "session/session.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "common/errors.h"
#include "data/synthetic.h"
#include "io/atomic_file.h"

namespace tl {
namespace fs = std::filesystem;
using nlohmann::json;

Precision parsePrecision(const std::string& text) {
  if (text == "f64") return Precision::F64;
  if (text == "f32") return Precision::F32;
  throw InvalidArgument("precision '" + text + "' is not valid; expected f64 or f32");
}

const char* precisionName(Precision p) { return p == Precision::F64 ? "f64" : "f32"; }

SwapScope parseSwapScope(const std::string& text) {
  for (SwapScope scope :
       {SwapScope::None, SwapScope::Layer, SwapScope::FromLayer, SwapScope::AllLayers, SwapScope::Listed})
    if (text == swapScopeName(scope)) return scope;
  throw InvalidArgument("swap '" + text + "' is not valid; expected none, layer, from-layer, all-layers or listed");
}

const char* swapScopeName(SwapScope scope) {
  switch (scope) {
    case SwapScope::None: return "none";
    case SwapScope::Layer: return "layer";
    case SwapScope::FromLayer: return "from-layer";
    case SwapScope::AllLayers: return "all-layers";
    case SwapScope::Listed: return "listed";
  }
  return "none";
}

std::vector<int> swappedLayers(SwapScope scope, int layer, int numLayers, const std::vector<int>& listed) {
  if (scope == SwapScope::Listed) {
    for (int l : listed)
      if (l < 0 || l >= numLayers)
        throw InvalidArgument("swap_layers names layer " + std::to_string(l) + ", but the model has " +
                              std::to_string(numLayers) + " layers (0 to " + std::to_string(numLayers - 1) + ")");
    return listed;
  }
  std::vector<int> layers;
  const int first = scope == SwapScope::AllLayers ? 0 : layer;
  const int last = scope == SwapScope::Layer ? layer : numLayers - 1;
  if (scope != SwapScope::None)
    for (int l = first; l <= last && l < numLayers; ++l) layers.push_back(l);
  return layers;
}

double unitRoundoff(Precision p) {
  return p == Precision::F64 ? std::numeric_limits<double>::epsilon() : double(std::numeric_limits<float>::epsilon());
}

namespace {

json paramsToJson(const ParamSet& params) {
  json j = json::object();
  // An explicit pair, not a structured binding: lambdas may capture bindings only from C++20 (clang refuses).
  for (const auto& entry : params) std::visit([&](const auto& v) { j[entry.first] = v; }, entry.second);
  return j;
}

ParamSet paramsFromJson(const json& j, const std::string& owner) {
  if (!j.is_object()) throw InvalidArgument("session: parameters of " + owner + " must be a JSON object");
  ParamSet p;
  for (const auto& [name, value] : j.items()) {
    if (value.is_boolean()) p[name] = value.get<bool>();
    else if (value.is_number_integer()) p[name] = value.get<long long>();
    else if (value.is_number()) p[name] = value.get<double>();
    else if (value.is_string()) p[name] = value.get<std::string>();
    else throw InvalidArgument("session: parameter '" + name + "' of " + owner + " must be a number, boolean or string");
  }
  return p;
}

std::string resolvePath(const std::string& path, const std::string& baseDir) {
  if (path.empty() || baseDir.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(baseDir) / path).lexically_normal().string();
}

// Paths inside the session's folder are stored relative to it, so a folder of session + data can move.
std::string relativeTo(const std::string& path, const std::string& baseDir) {
  if (path.empty() || baseDir.empty()) return path;
  const fs::path rel = fs::absolute(path).lexically_normal().lexically_relative(fs::absolute(baseDir).lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

// A rank-decay model source names its checkpoint as the main source does: relative to the session's folder
// in the file, resolved against it when read. `map` is resolvePath or relativeTo; other sources keep their text.
std::string mapRankDecayCheckpoint(const std::string& text, std::string (*map)(const std::string&, const std::string&),
                                   const std::string& baseDir) {
  rankdecay::RankDecaySource source = rankdecay::parseRankDecaySource(text);
  if (source.kind != rankdecay::SourceKind::Model || baseDir.empty()) return text;
  const std::string checkpoint = getString(source.params, "checkpoint");
  const std::string mapped = map(checkpoint, baseDir);
  if (mapped == checkpoint) return text;
  source.params["checkpoint"] = mapped;
  return source.toString();
}

json rankDecayToJson(const rankdecay::RankDecaySettings& settings, const std::string& baseDir) {
  json out = settings.toJson();
  out["source"] = mapRankDecayCheckpoint(settings.source, relativeTo, baseDir);
  return out;
}

json sourceToJson(const SourceSpec& s, const std::string& baseDir) {
  if (s.kind == SourceSpec::Kind::Synthetic)
    return {{"kind", "synthetic"}, {"generator", s.generator}, {"params", paramsToJson(s.params)}};
  if (s.kind == SourceSpec::Kind::Model) {
    ImageSource image = s.model.image;
    if (image.isFile()) image.file = relativeTo(image.file, baseDir);
    return {{"kind", "model"},
            {"checkpoint", relativeTo(s.model.checkpoint, baseDir)},
            {"image", image.toString()},
            {"layer", s.model.layer},
            {"head", s.model.head}};
  }
  return {{"kind", "files"},
          {"q", relativeTo(s.q, baseDir)},
          {"k", relativeTo(s.k, baseDir)},
          {"v", relativeTo(s.v, baseDir)},
          {"mask", relativeTo(s.mask, baseDir)}};
}

// An integer field, or `fallback` when absent. json::value would convert 1e111 to int (undefined behaviour, found by
// the fuzzer), so the type and the range are checked first.
int intField(const json& j, const char* key, int fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < std::numeric_limits<int>::min() ||
      v.get<long long>() > std::numeric_limits<int>::max())
    throw InvalidArgument(std::string("session: \"") + key + "\" must be an integer, not " + v.dump());
  return v.get<int>();
}

SourceSpec sourceFromJson(const json& j, const std::string& baseDir) {
  SourceSpec s;
  const std::string kind = j.value("kind", "");
  if (kind == "synthetic") {
    s.kind = SourceSpec::Kind::Synthetic;
    s.generator = j.value("generator", "");
    const auto& gen = syntheticGenerator(s.generator);
    s.params = gen.schema.resolve(paramsFromJson(j.value("params", json::object()), s.generator),
                                  "synthetic:" + s.generator);
  } else if (kind == "files") {
    s.kind = SourceSpec::Kind::Files;
    s.q = resolvePath(j.value("q", ""), baseDir);
    s.k = resolvePath(j.value("k", ""), baseDir);
    s.v = resolvePath(j.value("v", ""), baseDir);
    s.mask = resolvePath(j.value("mask", ""), baseDir);
    if (s.q.empty() || s.k.empty()) throw InvalidArgument("session: a files source needs q and k paths");
  } else if (kind == "model") {
    s.kind = SourceSpec::Kind::Model;
    s.model.checkpoint = resolvePath(j.value("checkpoint", ""), baseDir);
    if (s.model.checkpoint.empty()) throw InvalidArgument("session: a model source needs a checkpoint path");
    s.model.image = ImageSource::parse(j.value("image", "fashion-mnist:test:0"));
    if (s.model.image.isFile()) s.model.image.file = resolvePath(s.model.image.file, baseDir);
    s.model.layer = intField(j, "layer", 0);
    s.model.head = intField(j, "head", 0);
    if (s.model.layer < 0 || s.model.head < 0) throw InvalidArgument("session: model layer and head are indices from 0");
  } else {
    throw InvalidArgument("session: source kind '" + kind + "' is not valid; expected synthetic, files or model");
  }
  return s;
}

// A figure is rendered at width·scale × height·scale pixels; beyond these bounds it would need gigabytes.
void validateExportSettings(const ExportSettings& e) {
  constexpr int kLargestSide = 16384;
  constexpr double kLargestScale = 8;
  if (e.width < 1 || e.width > kLargestSide || e.height < 1 || e.height > kLargestSide)
    throw InvalidArgument("session: export width and height must be 1 to " + std::to_string(kLargestSide) +
                          " pixels, not " + std::to_string(e.width) + " × " + std::to_string(e.height));
  if (!(e.scale > 0 && e.scale <= kLargestScale) || e.width * e.scale > kLargestSide || e.height * e.scale > kLargestSide)
    throw InvalidArgument("session: export scale must be above 0 and keep width·scale and height·scale within " +
                          std::to_string(kLargestSide) + " pixels");
}

// swap_layers: distinct layer indices ≥ 0, returned ascending.
std::vector<int> readSwapLayers(const json& j) {
  if (!j.is_array()) throw InvalidArgument("swap_layers must be a list of layer indices, e.g. [0, 2]");
  std::vector<int> layers;
  for (const json& e : j) {
    if (!e.is_number_integer() || e.get<long long>() < 0 || e.get<long long>() > 1'000'000)
      throw InvalidArgument("swap_layers must list layer indices ≥ 0; got " + e.dump());
    layers.push_back(e.get<int>());
  }
  std::sort(layers.begin(), layers.end());
  if (std::adjacent_find(layers.begin(), layers.end()) != layers.end())
    throw InvalidArgument("swap_layers lists a layer twice: " + j.dump());
  return layers;
}

json toJsonWithBase(const Session& s, const std::string& baseDir) {
  json ops = json::array();
  for (const auto& op : s.operators) ops.push_back({{"family", op.family}, {"params", paramsToJson(op.params)}});
  json j = {{"format", Session::kFormatName},
          {"version", Session::kFormatVersion},
          {"source", sourceToJson(s.source, baseDir)},
          {"precision", precisionName(s.precision)},
          {"device", deviceChoiceName(s.device)},
          {"operators", ops},
          {"views", s.views},
          {"swap", swapScopeName(s.swapScope)},
          {"view_state", s.viewState},
          {"rank_decay", rankDecayToJson(s.rankDecay, baseDir)},
          {"export",
           {{"formats", s.exportSettings.formats},
            {"width", s.exportSettings.width},
            {"height", s.exportSettings.height},
            {"scale", s.exportSettings.scale}}}};
  if (s.swapScope == SwapScope::Listed) j["swap_layers"] = s.swapLayers;
  return j;
}

}  // namespace

json Session::toJson() const { return toJsonWithBase(*this, ""); }

Session Session::fromJson(const json& j, const std::string& baseDir) {
  // Every read is inside the try: json::value throws when a field has the wrong type ("format": [..]).
  try {
    if (!j.is_object() || j.value("format", "") != kFormatName)
      throw InvalidArgument(std::string("not a TransportLens session (expected \"format\": \"") + kFormatName + "\")");
    const int version = intField(j, "version", 0);
    if (version > kFormatVersion)
      throw InvalidArgument("session format version " + std::to_string(version) +
                            " is newer than this TransportLens understands (" + std::to_string(kFormatVersion) +
                            "); update TransportLens");
    if (version < 1) throw InvalidArgument("session has no valid \"version\"");
    Session s;
    if (!j.contains("source") || !j["source"].is_object())
      throw InvalidArgument("session has no \"source\" object (synthetic generator or files)");
    s.source = sourceFromJson(j["source"], baseDir);
    s.precision = parsePrecision(j.value("precision", "f64"));
    s.device = parseDeviceChoice(j.value("device", "cpu"));  // sessions saved before the CUDA backend: cpu
    s.operators.clear();
    for (const auto& op : j.value("operators", json::array())) {
      const std::string family = op.value("family", "");
      s.operators.push_back(
          OperatorRegistry::builtin().resolve(family, paramsFromJson(op.value("params", json::object()), family)));
    }
    if (s.operators.empty()) throw InvalidArgument("session lists no operators");
    s.views = j.value("views", s.views);
    s.swapScope = parseSwapScope(j.value("swap", std::string(swapScopeName(SwapScope::Layer))));
    s.swapLayers = readSwapLayers(j.value("swap_layers", json::array()));
    if (s.swapScope == SwapScope::Listed && s.swapLayers.empty())
      throw InvalidArgument("swap \"listed\" needs swap_layers, the layers to swap into (e.g. [0, 2])");
    s.viewState = j.value("view_state", json::object());
    if (j.contains("rank_decay")) {
      s.rankDecay = rankdecay::RankDecaySettings::fromJson(j["rank_decay"]);
      s.rankDecay.source = mapRankDecayCheckpoint(s.rankDecay.source, resolvePath, baseDir);
    }
    const json ex = j.value("export", json::object());
    s.exportSettings.formats = ex.value("formats", s.exportSettings.formats);
    s.exportSettings.width = intField(ex, "width", s.exportSettings.width);
    s.exportSettings.height = intField(ex, "height", s.exportSettings.height);
    s.exportSettings.scale = ex.value("scale", s.exportSettings.scale);
    validateExportSettings(s.exportSettings);
    return s;
  } catch (const json::exception& e) {
    throw InvalidArgument(std::string("session: ") + e.what());
  }
}

void Session::save(const std::string& path) const {
  const std::string baseDir = fs::absolute(path).parent_path().string();
  writeFileAtomically(path, toJsonWithBase(*this, baseDir).dump(2) + "\n");
}

Session Session::load(const std::string& path) {
  const std::string text = readFile(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number that overflows a double
    throw FileError(path + ": not a valid session file (JSON error: " + e.what() + ")");
  }
  try {
    return fromJson(j, fs::absolute(path).parent_path().string());
  } catch (const InvalidArgument& e) {
    throw FileError(path + ": " + e.what());
  }
}

}  // namespace tl
