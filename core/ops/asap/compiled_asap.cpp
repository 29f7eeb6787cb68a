#include "ops/asap/compiled_asap.h"

#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/errors.h"
#include "common/params.h"
#include "io/atomic_file.h"
#include "io/checkpoint/safetensors.h"
#include "io/npy_cache.h"
#include "ops/asap/feature_families.h"

namespace tl {
namespace {

const char* kTensorsFile = "/asap.safetensors";
const char* kManifestFile = "/asap.json";

HostTensor toTensor(const double* data, std::vector<int64_t> shape) {
  HostTensor t;
  t.shape = std::move(shape);
  t.values.resize(size_t(t.numel()));
  for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = float(data[i]);
  return t;
}

MatD fromTensor(const HostTensor& t, const std::string& name, const std::string& path) {
  if (t.shape.size() > 2 || t.shape.empty()) throw FileError(path + ": tensor " + name + " is not 1-D or 2-D");
  MatD m(t.shape[0], t.shape.size() == 2 ? t.shape[1] : 1);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = double(t.values[size_t(i)]);
  return m;
}

std::string prefix(int layer) { return "layers." + std::to_string(layer) + "."; }

nlohmann::json layerJson(const CompiledAsapLayer& l) {
  nlohmann::json j = {{"layer", l.layer},   {"L", l.slices.rows()}, {"d", l.slices.cols()},   {"seed", l.seed},
                      {"fit", l.fit},       {"lambda_b", l.lambdaB}, {"lambda", l.lambda},     {"rows", l.rows},
                      {"instances", l.instances}, {"r2", l.r2},     {"delta", l.delta},       {"fit_seconds", l.fitSeconds},
                      {"converged", l.converged}};
  if (l.keyBeta.size() > 0) {
    j["key_r2"] = l.keyR2;
    j["key_delta"] = l.keyDelta;
  }
  return j;
}

MatD requiredTensor(const SafetensorsFile& tensors, int layer, const std::string& name, const std::string& path) {
  const std::string key = prefix(layer) + name;
  if (!tensors.tensors.count(key))
    throw FileError(path + ": no tensor " + key + " for layer " + std::to_string(layer));
  return fromTensor(tensors.tensors.at(key), name, path);
}

}  // namespace

const CompiledAsapLayer& CompiledAsap::at(int layer) const {
  std::string compiled;
  for (const auto& l : layers) {
    if (l.layer == layer) return l;
    compiled += (compiled.empty() ? "" : ", ") + std::to_string(l.layer);
  }
  throw InvalidArgument("asap: layer " + std::to_string(layer) + " is not compiled (compiled layers: " + compiled + ")");
}

void CompiledAsap::roundToStoredPrecision() {
  for (auto& l : layers) {
    l.slices = l.slices.cast<float>().cast<double>();
    l.beta = l.beta.cast<float>().cast<double>();
    l.keyBeta = l.keyBeta.cast<float>().cast<double>();
  }
}

void saveCompiledAsap(const std::string& dir, const CompiledAsap& c) {
  ensureDirectory(dir);
  TensorMap tensors;
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : c.layers) {
    tensors[prefix(l.layer) + "slices"] = toTensor(l.slices.data(), {l.slices.rows(), l.slices.cols()});
    tensors[prefix(l.layer) + "beta"] = toTensor(l.beta.data(), {l.beta.size()});
    if (l.keyBeta.size() > 0) tensors[prefix(l.layer) + "key_beta"] = toTensor(l.keyBeta.data(), {l.keyBeta.size()});
    layers.push_back(layerJson(l));
  }
  writeSafetensors(dir + kTensorsFile, tensors, {{"format", "transportlens-asap"}});
  const nlohmann::json manifest = {{"format", "transportlens-asap"}, {"version", 1},
                                   {"checkpoint", c.checkpoint},     {"calibration", c.calibration},
                                   {"teacher", c.teacher},           {"T", c.T},
                                   {"eps", c.eps},                   {"closing", c.closing},
                                   {"sequential", c.sequential},     {"shared", c.shared},
                                   {"features", c.features},
                                   {"tensors", "asap.safetensors"},
                                   {"layers", layers}};
  writeFileAtomically(dir + kManifestFile, manifest.dump(1) + "\n");
}

CompiledAsap loadCompiledAsap(const std::string& dir) {
  const std::string manifestPath = dir + kManifestFile, tensorsPath = dir + kTensorsFile;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(readFile(manifestPath));
  } catch (const nlohmann::json::exception& e) {
    throw FileError(manifestPath + ": not valid JSON (" + e.what() + ")");
  }
  const SafetensorsFile tensors = readSafetensors(tensorsPath);
  CompiledAsap c;
  try {
    if (j.at("format") != "transportlens-asap") throw FileError(manifestPath + ": not a compiled ASAP manifest");
    c.checkpoint = j.at("checkpoint").get<std::string>();
    c.calibration = j.at("calibration").get<std::string>();
    c.teacher = j.at("teacher").get<std::string>();
    c.T = j.at("T").get<int>();
    c.eps = j.at("eps").get<double>();
    c.closing = j.at("closing").get<std::string>();
    c.sequential = j.at("sequential").get<bool>();
    c.shared = j.value("shared", false);  // absent: per-layer fits
    c.features = j.value("features", std::string("potentials"));  // absent: written before the families existed
    AsapFeatures features;
    try {
      features = parseAsapFeatures(c.features);
    } catch (const InvalidArgument& e) {
      throw FileError(manifestPath + ": " + e.what());
    }
    for (const auto& e : j.at("layers")) {
      CompiledAsapLayer l;
      l.layer = e.at("layer").get<int>();
      l.seed = e.at("seed").get<uint64_t>();
      l.fit = e.at("fit").get<std::string>();
      l.lambdaB = e.at("lambda_b").get<double>();
      l.lambda = e.at("lambda").get<double>();
      l.rows = e.at("rows").get<long long>();
      l.instances = e.at("instances").get<long long>();
      l.r2 = e.at("r2").get<double>();
      l.delta = e.at("delta").get<double>();
      l.fitSeconds = e.at("fit_seconds").get<double>();
      l.converged = e.at("converged").get<bool>();
      l.slices = requiredTensor(tensors, l.layer, "slices", tensorsPath);
      l.beta = requiredTensor(tensors, l.layer, "beta", tensorsPath);
      if (predictsBothDuals(features)) {
        l.keyBeta = requiredTensor(tensors, l.layer, "key_beta", tensorsPath);
        l.keyR2 = e.at("key_r2").get<double>();
        l.keyDelta = e.at("key_delta").get<double>();
      }
      for (const VecD* coefficients : {&l.beta, &l.keyBeta})
        if ((coefficients == &l.beta || predictsBothDuals(features)) && coefficients->size() != l.slices.rows())
          throw FileError(tensorsPath + ": layer " + std::to_string(l.layer) + " has " +
                          std::to_string(coefficients->size()) + " coefficients for " +
                          std::to_string(l.slices.rows()) + " slices");
      c.layers.push_back(std::move(l));
    }
  } catch (const nlohmann::json::exception& e) {
    throw FileError(manifestPath + ": missing or malformed field (" + e.what() + ")");
  }
  return c;
}

CompiledAsap loadCompiledAsapCached(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::string, CompiledAsap>> cache;  // dir → (content key, state)
  const std::string key = fileKey(dir + kManifestFile) + "/" + fileKey(dir + kTensorsFile);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(dir);
  if (it == cache.end() || it->second.first != key) it = cache.insert_or_assign(dir, std::make_pair(key, loadCompiledAsap(dir))).first;
  return it->second.second;
}

std::string compiledAsapOperator(const CompiledAsap& compiled, const std::string& dir) {
  const std::string features = compiled.features == "potentials" ? "" : ",features=" + compiled.features;
  return "asap:compiled=" + dir + ",eps=" + formatValue(compiled.eps) + ",closing=" + compiled.closing + features;
}

}  // namespace tl
