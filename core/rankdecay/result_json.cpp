#include "rankdecay/result_json.h"

#include <cstdio>

#include "io/csv.h"

namespace tl::rankdecay {
namespace {

using nlohmann::json;

std::string orderName(ProductOrder order) { return order == ProductOrder::Literal ? "literal" : "network"; }

json depthJson(const DepthSummary& d) {
  return {{"t", d.t},
          {"median", d.box.median},
          {"q1", d.box.q1},
          {"q3", d.box.q3},
          {"whisker_low", d.box.whiskerLow},
          {"whisker_high", d.box.whiskerHigh},
          {"min", d.box.min},
          {"max", d.box.max},
          {"factor_marginal_error", d.factorMarginalError},
          {"values", d.values}};
}

json layerJson(const LayerSummary& s) {
  return {{"layer", s.layer},        {"median", s.median},
          {"mean", s.mean},          {"std", s.std},
          {"log10_mean", s.log10Rho.mean}, {"log10_std", s.log10Rho.std},
          {"res_median", s.resMedian}};
}

json attentionJson(const AttentionLayerStats& s) {
  return {{"layer", s.layer},
          {"row_error_max", s.rowErrorMax},
          {"col_error_max", s.colErrorMax},
          {"entropy", s.entropy},
          {"effective_rank", s.effectiveRank}};
}

json theoryJson(const TheoryCurve& c) {
  json j = {{"name", c.name}, {"label", c.label}, {"applies", c.applies}, {"log10_res", c.log10}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (c.name == "printed" || c.name == "linearised") j["vacuous_fraction"] = c.vacuousFraction;
  if (c.name == "linearised") j["valid_layers"] = c.validLayers;
  if (!c.localLog10.empty()) j["local_log10_res"] = c.localLog10;
  return j;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace

json toJson(const RankDecayResult& result) {
  const RankDecayRequest& r = result.request;
  json out = {{"source", r.source.toString()},
              {"config", configName(r.config)},
              {"paths", r.paths.paths},
              {"order", orderName(r.paths.order)},
              {"sample_per_layer", r.paths.samplePerLayer},
              {"seed", r.paths.seed},
              {"seeds", r.seeds},
              {"scale", "attention"},
              {"operators", json::array()}};
  for (const OperatorCurves& c : result.operators) {
    json op = {{"op", operatorLabel(c.op)}, {"family", c.op.family}};
    if (r.wantPaths) {
      op["paths"] = json::array();
      for (const DepthSummary& d : c.paths) op["paths"].push_back(depthJson(d));
    }
    if (r.wantOutputs) {
      op["outputs"] = json::array();
      for (const LayerSummary& s : c.outputs) op["outputs"].push_back(layerJson(s));
      op["theory"] = json::array();
      for (const TheoryCurve& t : c.theory) op["theory"].push_back(theoryJson(t));
    }
    if (!c.attention.empty()) {
      op["attention"] = json::array();
      for (const AttentionLayerStats& s : c.attention) op["attention"].push_back(attentionJson(s));
    }
    out["operators"].push_back(op);
  }
  return out;
}

std::string pathsCsv(const RankDecayResult& result) {
  std::vector<CsvRow> rows;
  for (const OperatorCurves& c : result.operators)
    for (const DepthSummary& d : c.paths)
      rows.push_back({operatorLabel(c.op), std::to_string(d.t), number(d.box.median), number(d.box.q1), number(d.box.q3),
                      number(d.box.whiskerLow), number(d.box.whiskerHigh), number(d.box.min), number(d.box.max)});
  return encodeCsvTable({"op", "t", "median", "q1", "q3", "whisker_low", "whisker_high", "min", "max"}, rows);
}

std::string outputsCsv(const RankDecayResult& result) {
  std::vector<CsvRow> rows;
  for (const OperatorCurves& c : result.operators)
    for (const LayerSummary& s : c.outputs)
      rows.push_back({operatorLabel(c.op), std::to_string(s.layer), number(s.median), number(s.mean), number(s.std),
                      number(s.resMedian)});
  return encodeCsvTable({"op", "layer", "median", "mean", "std", "res_median"}, rows);
}

}  // namespace tl::rankdecay

namespace tl::rankdecay {

std::string curvesCsv(const std::vector<RankDecayResult>& results) {
  std::vector<CsvRow> rows;
  for (const RankDecayResult& result : results) {
    const std::string config = result.request.source.kind == SourceKind::Random ? "" : configName(result.request.config);
    for (const OperatorCurves& c : result.operators) {
      for (const DepthSummary& d : c.paths)
        rows.push_back({config, operatorLabel(c.op), "path", std::to_string(d.t), number(d.box.median), number(d.box.q1),
                        number(d.box.q3), "", "", ""});
      for (const LayerSummary& s : c.outputs)
        rows.push_back({config, operatorLabel(c.op), "output", std::to_string(s.layer), number(s.median), "", "",
                        number(s.mean), number(s.std), number(s.resMedian)});
    }
  }
  return encodeCsvTable({"config", "op", "measure", "index", "median", "q1", "q3", "mean", "std", "res_median"}, rows);
}

}  // namespace tl::rankdecay
