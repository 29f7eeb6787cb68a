#include "plan_metrics.h"

#include <cmath>

#include "analysis/plan_stats.h"

namespace tl::cli {
namespace {

// JSON has no infinity or NaN; a non-finite error (which would be a bug worth seeing) is written as null.
nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json errorsJson(const MarginalErrors& e) {
  return {{"row_max", number(e.rowMax)},
          {"row_mean", number(e.rowMean)},
          {"col_max", number(e.colMax)},
          {"col_mean", number(e.colMean)}};
}

nlohmann::json paramsJson(const ParamSet& params) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : params) std::visit([&, &n = name](const auto& x) { out[n] = x; }, value);
  return out;
}

}  // namespace

nlohmann::json planMetrics(const PlanRunInfo& info, const PlanResult<double>& result) {
  nlohmann::json history = nlohmann::json::array();
  for (size_t t = 0; t < result.errorHistory.size(); ++t) {
    auto step = errorsJson(result.errorHistory[t]);
    step["step"] = t + 1;
    history.push_back(step);
  }
  const RowEntropy entropy = rowEntropy(result.plan);
  return {{"family", info.op.family},
          {"operator", info.op.toString()},
          {"params", paramsJson(info.op.params)},
          {"source", info.source.toString()},
          {"precision", precisionName(info.precision)},
          {"n_q", info.nQueries},
          {"n_k", info.nKeys},
          {"d", info.headDim},
          {"plan_scale", "attention (A = n_q P; rows = queries)"},
          {"marginal_errors", errorsJson(result.errors)},
          {"marginal_error_history", history},
          {"mass_mismatch", result.massMismatch},
          {"row_entropy", {{"mean", number(entropy.mean)}, {"std", number(entropy.stddev)}}},
          {"seconds", result.seconds},
          {"wall_seconds", info.wallSeconds}};
}

}  // namespace tl::cli
