#pragma once
// metrics.json of `tlens plan`: what was computed (family, resolved parameters, source, precision, shapes)
// and how well (marginal errors per spec/README.md errata 2, their per-step history, row entropy, timing).
#include <nlohmann/json.hpp>

#include "data/source.h"
#include "ops/plan_result.h"
#include "ops/registry.h"
#include "session/session.h"

namespace tl::cli {

struct PlanRunInfo {
  OperatorSpec op;
  SourceSpec source;
  Precision precision = Precision::F64;
  int nQueries = 0, nKeys = 0, headDim = 0;
  double wallSeconds = 0;  // loading + operator + analysis, as the user waited for it
};

nlohmann::json planMetrics(const PlanRunInfo& info, const PlanResult<double>& result);

}  // namespace tl::cli
