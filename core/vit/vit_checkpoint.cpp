#include "vit/vit_checkpoint.h"

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "io/checkpoint/safetensors.h"
#include "io/checkpoint/torch_zip.h"
#include "io/checkpoint/zip_archive.h"

namespace tl {
namespace {

namespace fs = std::filesystem;

// TorchScript archives carry their code (<archive>/code/…) and constants.pkl; torch.save archives do not.
bool isTorchScript(const std::string& path) {
  const ZipArchive zip = ZipArchive::open(path);
  for (const auto& e : zip.entries())
    if (e.name.find("/code/") != std::string::npos || e.name.find("constants.pkl") != std::string::npos) return true;
  return false;
}

std::atomic<TorchScriptReader> torchScriptReader{nullptr};

TensorMap readTorchScript(const std::string& path) {
  if (const TorchScriptReader reader = torchScriptReader.load()) return reader(path);
  throw FileError(path + ": a TorchScript archive, which only the LibTorch model layer can read, and this "
                         "TransportLens was built without it (TL_TORCH=OFF)");
}

StoredTensorMap held(TensorMap tensors) {
  StoredTensorMap out;
  for (auto& [name, t] : tensors) out.emplace(name, StoredTensor::holding(std::move(t)));
  return out;
}

// safetensors and torch.save files stay mapped until the model decodes them; TorchScript goes through LibTorch.
StoredTensorMap readWeights(const std::string& path) {
  if (fs::path(path).extension() == ".safetensors") return mapSafetensors(path).tensors;
  return isTorchScript(path) ? held(readTorchScript(path)) : mapTorchZip(path);
}

// nn.DataParallel saves every name under "module.".
StoredTensorMap withoutModulePrefix(StoredTensorMap tensors) {
  const std::string prefix = "module.";
  for (const auto& entry : tensors)
    if (entry.first.rfind(prefix, 0) != 0) return tensors;
  StoredTensorMap out;
  for (auto& [name, t] : tensors) out[name.substr(prefix.size())] = std::move(t);
  return out;
}

// HF's preprocessor_config.json: image_mean, image_std, and do_normalize = false meaning none.
ImageNormalisation preprocessorNormalisation(const fs::path& folder) {
  const fs::path path = folder / "preprocessor_config.json";
  ImageNormalisation n{{0.5}, {0.5}};  // ViTImageProcessor's defaults
  if (!fs::exists(path)) return n;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(readFile(path.string()));
    if (j.contains("do_normalize") && !j.at("do_normalize").get<bool>()) return {{0.0}, {1.0}};
    if (j.contains("image_mean")) n.mean = j.at("image_mean").get<std::vector<double>>();
    if (j.contains("image_std")) n.std = j.at("image_std").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    throw FileError(path.string() + ": not a readable preprocessor config (" + e.what() + ")");
  }
  return n;
}

VitCheckpointFile withConfig(const std::string& configPath, StoredTensorMap tensors, const std::string& weightsPath) {
  VitCheckpointFile c;
  c.config = parseVitConfig(readFile(configPath), configPath, preprocessorNormalisation(fs::path(configPath).parent_path()));
  checkVitTensors(tensors, c.config, weightsPath);
  c.tensors = std::move(tensors);
  return c;
}

VitCheckpointFile openFolder(const fs::path& folder) {
  const fs::path config = folder / "config.json";
  if (!fs::exists(config))
    throw FileError(folder.string() + ": no config.json (a ViT checkpoint folder holds config.json and model.safetensors)");
  fs::path weights = folder / "model.safetensors";
  if (!fs::exists(weights)) weights = folder / "pytorch_model.bin";
  if (!fs::exists(weights))
    throw FileError(folder.string() + ": no model.safetensors (nor pytorch_model.bin) beside config.json");
  StoredTensorMap tensors = withoutModulePrefix(readWeights(weights.string()));
  if (isVitPytorchLayout(tensors))
    throw FileError(weights.string() + ": the tensors have vit-pytorch names, which config.json does not describe; "
                                       "open the weights file itself with a vit-pytorch side file instead");
  return withConfig(config.string(), std::move(tensors), weights.string());
}

}  // namespace

VitCheckpointFile openVitCheckpoint(const std::string& path, const VitImportOptions& options) {
  if (fs::is_directory(path)) return openFolder(path);
  if (!fs::exists(path)) throw FileError(path + ": no such file or folder");
  StoredTensorMap tensors = withoutModulePrefix(readWeights(path));
  if (isVitPytorchLayout(tensors)) {
    const VitPytorchOptions side = options.sideFile.empty() ? VitPytorchOptions{} : readVitPytorchSideFile(options.sideFile);
    VitCheckpoint converted = convertVitPytorch(decodeAll(tensors), mergeOptions(options.vitPytorch, side), path);
    return {std::move(converted.config), held(std::move(converted.tensors))};
  }
  const std::string config =
      options.config.empty() ? (fs::path(path).parent_path() / "config.json").string() : options.config;
  if (!fs::exists(config))
    throw FileError(path + ": the tensors have Hugging Face names, so a config.json is needed, and " + config +
                    " does not exist; name one");
  return withConfig(config, std::move(tensors), path);
}

VitCheckpoint readVitCheckpoint(const std::string& path, const VitImportOptions& options) {
  VitCheckpointFile file = openVitCheckpoint(path, options);
  return {std::move(file.config), decodeAll(file.tensors)};
}

void installTorchScriptReader(TorchScriptReader reader) { torchScriptReader.store(reader); }

void writeVitCheckpoint(const std::string& dir, const VitCheckpoint& checkpoint) {
  checkVitTensors(checkpoint.tensors, checkpoint.config, dir);
  ensureDirectory(dir);
  writeFileAtomically((fs::path(dir) / "config.json").string(), vitConfigJson(checkpoint.config));
  // transformers refuses safetensors files whose metadata lacks format = pt.
  writeSafetensors((fs::path(dir) / "model.safetensors").string(), checkpoint.tensors, {{"format", "pt"}});
}

}  // namespace tl
