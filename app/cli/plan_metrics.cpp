#include "plan_metrics.h"

#include <cmath>

#include "session/backend_choice.h"

namespace tl::cli {
namespace {

// JSON has no infinity or NaN: a non-finite number (an infinite row KL, or an error that would be a bug worth
// seeing) is written as null.
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

nlohmann::json analysisJson(const PlanAnalysis& a) {
  nlohmann::json rank;
  if (a.rank) {
    rank = {{"effective", number(a.rank->effective)},
            {"numerical", a.rank->numerical},
            {"tolerance", number(a.rank->tolerance)}};
  } else {
    rank = {{"skipped", "n > " + std::to_string(kMaxRankSize) + " (singular values would take too long)"}};
  }
  return {{"marginal_errors", errorsJson(a.errors)},
          {"mass_mismatch", a.massMismatch},
          {"row_entropy", {{"mean", number(a.entropy.mean)}, {"std", number(a.entropy.stddev)}}},
          {"column_mass", {{"max_sum", number(a.columnMass.maxSum)}, {"gini", number(a.columnMass.gini)}}},
          {"rank", rank},
          {"seconds", a.seconds}};
}

nlohmann::json comparisonJson(const PlanComparison& c) {
  return {{"relative_frobenius", number(c.relativeFrobenius)},
          {"max_abs", number(c.maxAbs)},
          {"mean_row_kl", number(c.meanRowKl)},
          {"output_difference", c.outputDifference ? number(*c.outputDifference) : nlohmann::json(nullptr)}};
}

nlohmann::json planMetrics(const PlanRunInfo& info, const PlanResult<double>& result) {
  nlohmann::json history = nlohmann::json::array();
  for (size_t t = 0; t < result.errorHistory.size(); ++t) {
    auto step = errorsJson(result.errorHistory[t]);
    step["step"] = t + 1;
    history.push_back(step);
  }
  const Precision computed = result.backend == Backend::Cuda ? Precision::F32 : info.precision;
  nlohmann::json metrics = {{"family", info.op.family},
                            {"operator", info.op.toString()},
                            {"params", paramsJson(info.op.params)},
                            {"source", info.source.toString()},
                            {"precision", precisionName(computed)},
                            {"device", deviceChoiceName(info.device)},
                            {"device_used", backendName(result.backend)},
                            {"device_note", result.backendNote},
                            {"n_q", info.nQueries},
                            {"n_k", info.nKeys},
                            {"d", info.headDim},
                            {"plan_scale", "attention (A = n_q P; rows = queries)"},
                            {"marginal_error_history", history},
                            {"wall_seconds", info.wallSeconds}};
  if (result.backend == Backend::Cuda) metrics["gpu"] = deviceLabel(result.backend);
  if (info.withPlan) {
    metrics.update(analysisJson(analyzePlan(result, unitRoundoff(computed))));
    return metrics;
  }
  // --no-plan: what the plan object gives without its dense matrix (the operator's errors, its column sums), in
  // the same keys; row entropy and rank say why they are missing.
  PlanAnalysis partial;
  partial.errors = result.errors;
  partial.massMismatch = result.massMismatch;
  partial.columnMass = columnMassOfSums(result.plan.colSums(), result.colTarget);
  partial.seconds = result.seconds;
  nlohmann::json analysis = analysisJson(partial);
  analysis["row_entropy"] = analysis["rank"] = {{"skipped", "--no-plan (needs the whole plan)"}};
  metrics.update(analysis);
  return metrics;
}

}  // namespace tl::cli
