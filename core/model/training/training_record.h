#pragma once
// JSON forms of the training records (options, per-epoch metrics, the final report), shared by the resumable
// training state and `tlens train --json`, so both spell every field the same way. No LibTorch here.
#include <nlohmann/json.hpp>

#include "model/training/training_run.h"

namespace tl {

nlohmann::json toJson(const TrainingOptions& options);
nlohmann::json toJson(const EpochMetrics& metrics);

// FileError naming `source` and the missing or mistyped field.
TrainingOptions trainingOptionsFromJson(const nlohmann::json& j, const std::string& source);
EpochMetrics epochMetricsFromJson(const nlohmann::json& j, const std::string& source);

}  // namespace tl
