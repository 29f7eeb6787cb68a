#include "model/training/training_state.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "model/training/training_record.h"

namespace tl {
namespace {

namespace fs = std::filesystem;

constexpr char kFormat[] = "transportlens-training-state";
constexpr int kVersion = 1;

std::string stateDir(const std::string& out) { return (fs::path(out) / "training_state").string(); }
std::string statePath(const std::string& out) { return (fs::path(stateDir(out)) / "state.json").string(); }
std::string optimizerPath(const std::string& out) { return (fs::path(stateDir(out)) / "optimizer.pt").string(); }
std::string modelPath(const std::string& out) { return (fs::path(out) / "model.safetensors").string(); }

// FNV-1a, 64 bit: detects files from different epochs, not tampering.
std::string fingerprint(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace

uint64_t epochRandomSeed(uint64_t seed, int epoch) {
  // splitmix64 of (seed, epoch): neighbouring seeds and epochs give unrelated mt19937_64 streams.
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t(epoch) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool hasTrainingState(const std::string& out) { return fs::exists(statePath(out)); }

void writeTrainingState(const std::string& out, const TrainingState& state, const std::string& optimizerBytes) {
  ensureDirectory(stateDir(out));
  writeFileAtomically(optimizerPath(out), optimizerBytes);
  nlohmann::json history = nlohmann::json::array();
  for (const auto& m : state.history) history.push_back(toJson(m));
  const nlohmann::json j = {
      {"format", kFormat},
      {"version", kVersion},
      {"options", toJson(state.options)},
      {"completed_epochs", state.completedEpochs},
      {"step", state.step},
      {"rng", {{"seed", state.options.seed},
               {"scheme", "epoch e shuffles and augments with SeededRandom(epochRandomSeed(seed, e)); torch's "
                          "generator (torch::manual_seed(seed)) only initialises the model"}}},
      {"history", history},
      {"fingerprints", {{"model.safetensors", fingerprint(readFile(modelPath(out)))},
                        {"optimizer.pt", fingerprint(optimizerBytes)}}}};
  writeFileAtomically(statePath(out), j.dump(2) + "\n");
}

StoredTraining readTrainingState(const std::string& out) {
  const std::string path = statePath(out);
  if (!fs::exists(path))
    throw FileError(out + ": no training state to resume (" + path + " is missing); train without --resume first");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(readFile(path));
  } catch (const nlohmann::json::exception& e) {
    throw FileError(path + ": not a readable training state (" + e.what() + ")");
  }
  if (j.value("format", "") != kFormat || j.value("version", 0) != kVersion)
    throw FileError(path + ": not a TransportLens training state of version " + std::to_string(kVersion));
  StoredTraining stored;
  TrainingState& s = stored.state;
  try {
    s.options = trainingOptionsFromJson(j.at("options"), path);
    s.completedEpochs = j.at("completed_epochs").get<int>();
    s.step = j.at("step").get<int64_t>();
    for (const auto& m : j.at("history")) s.history.push_back(epochMetricsFromJson(m, path));
  } catch (const nlohmann::json::exception& e) {
    throw FileError(path + ": incomplete training state (" + e.what() + ")");
  }
  s.options.out = out;
  s.options.resume = true;
  stored.optimizerBytes = readFile(optimizerPath(out));
  const auto& prints = j.value("fingerprints", nlohmann::json::object());
  if (prints.value("model.safetensors", "") != fingerprint(readFile(modelPath(out))) ||
      prints.value("optimizer.pt", "") != fingerprint(stored.optimizerBytes))
    throw FileError(out + ": model.safetensors or training_state/optimizer.pt is not from the epoch " +
                    std::to_string(s.completedEpochs) + " that state.json describes (a write was interrupted); "
                    "the run cannot be resumed exactly: start it again without --resume");
  return stored;
}

TrainingOptions storedTrainingOptions(const std::string& dir) { return readTrainingState(dir).state.options; }

}  // namespace tl
