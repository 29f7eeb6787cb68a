#pragma once
// A Session describes what to compute and show: source, operators with parameters, views, export
// settings. It is the unit the GUI saves, `tlens render` replays, and the Engine runs. JSON with a
// format version; view state is opaque to core (each view saves and restores its own block).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/registry.h"
#include "rankdecay/settings.h"
#include "session/source.h"

namespace tl {

enum class Precision { F64, F32 };
Precision parsePrecision(const std::string& text);  // "f64" | "f32"
const char* precisionName(Precision p);
// Unit roundoff of the precision (2^-52 or 2^-23): what numerical-rank tolerances scale with (analysis/rank.h).
double unitRoundoff(Precision p);

// Model sources: where the primary operator replaces the model's own normaliser for the [CLS] maps and the
// prediction. The operators always run on the source's layer and head; this says which layers of the model
// are re-run with operators[0] in place: none, the source's layer, it and every later one, all, or the layers
// listed in Session::swapLayers (a compiled model that covers only some layers swaps into exactly those).
enum class SwapScope { None, Layer, FromLayer, AllLayers, Listed };
// "none" | "layer" | "from-layer" | "all-layers" | "listed"
SwapScope parseSwapScope(const std::string& text);
const char* swapScopeName(SwapScope scope);
// Ascending. `listed` is Session::swapLayers, used by SwapScope::Listed only; InvalidArgument when it names a
// layer the model does not have.
std::vector<int> swappedLayers(SwapScope scope, int layer, int numLayers, const std::vector<int>& listed = {});

struct ExportSettings {
  std::vector<std::string> formats{"png", "svg", "pdf"};
  int width = 1200, height = 900;  // pixels for raster output
  double scale = 2.0;              // raster supersampling for publication-resolution PNGs
};

struct Session {
  static constexpr int kFormatVersion = 1;
  static constexpr const char* kFormatName = "transportlens-session";

  SourceSpec source;
  Precision precision = Precision::F64;
  // Where the operators run (ops/backend.h): cpu, cuda (float32; families without kernels run on the CPU and
  // say so) or auto (cuda when a usable device exists).
  DeviceChoice device = DeviceChoice::Cpu;
  std::vector<OperatorSpec> operators;  // operators[0] is the primary one; more for compare mode
  SwapScope swapScope = SwapScope::Layer;  // model sources only
  std::vector<int> swapLayers;             // scope "listed": these layers, ascending and distinct
  std::vector<std::string> views{"plan", "convergence", "cloud3d"};
  nlohmann::json viewState = nlohmann::json::object();  // per-view blocks, written by widgets
  // What the Rank decay view computes (with `operators`), when `views` lists "rank_decay".
  rankdecay::RankDecaySettings rankDecay;
  ExportSettings exportSettings;

  nlohmann::json toJson() const;
  // Relative file paths in the source resolve against `baseDir` (the session file's folder).
  static Session fromJson(const nlohmann::json& json, const std::string& baseDir = "");
  void save(const std::string& path) const;  // atomic
  static Session load(const std::string& path);  // FileError for unreadable/corrupt files
};

}  // namespace tl
