#pragma once
// metrics.json of `tlens plan`: what was computed (family, resolved parameters, source, precision, shapes)
// and how well (marginal errors per docs/conventions.md#marginal-errors, their per-step history, the analyses
// of analysis/summary.h, timing).
#include <nlohmann/json.hpp>

#include "analysis/summary.h"
#include "ops/plan_result.h"
#include "ops/registry.h"
#include "session/session.h"
#include "session/source.h"

namespace tl::cli {

struct PlanRunInfo {
  OperatorSpec op;
  SourceSpec source;
  Precision precision = Precision::F64;
  DeviceChoice device = DeviceChoice::Cpu;  // what was asked for; the result says what ran
  int nQueries = 0, nKeys = 0, headDim = 0;
  bool withPlan = true;  // false under --no-plan: no plan.npy, and no analysis that needs the dense plan
  double wallSeconds = 0;  // loading + operator + writing the arrays (analyses come after)
};

nlohmann::json planMetrics(const PlanRunInfo& info, const PlanResult<double>& result);

// The analyses of analysis/summary.h as JSON, shared by metrics.json and `tlens compare --json`. Keys:
// marginal_errors {row_max,row_mean,col_max,col_mean}, mass_mismatch, row_entropy {mean,std},
// column_mass {max_sum,gini}, rank {effective,numerical,tolerance}, seconds. Non-finite numbers are null
// (JSON has no infinity).
nlohmann::json analysisJson(const PlanAnalysis& analysis);
// relative_frobenius, max_abs, mean_row_kl, output_difference (null without V, or when infinite).
nlohmann::json comparisonJson(const PlanComparison& comparison);

}  // namespace tl::cli
