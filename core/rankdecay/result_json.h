#pragma once
// The JSON and CSV forms of a rank-decay result (docs/cli.md#rank-decay): the names scripts rely on
// (`t`, `median`, `q1`, `q3`, `min`, `max`, `values` per depth; `layer`, `median`, `mean`, `std`,
// `res_median` per layer), also used by the Session and the GUI's Rank decay view.
#include <nlohmann/json.hpp>
#include <string>

#include "rankdecay/experiment.h"

namespace tl::rankdecay {

nlohmann::json toJson(const RankDecayResult& result);
// One row per (operator, depth) for paths, per (operator, layer) for outputs.
std::string pathsCsv(const RankDecayResult& result);
std::string outputsCsv(const RankDecayResult& result);

}  // namespace tl::rankdecay

namespace tl::rankdecay {

// Every curve of several results (one per configuration) in one table, as the Rank decay view exports it:
// config, op, measure (path | output), index (t or layer), median, q1, q3, mean, std, res_median; cells that
// do not apply to a measure are empty.
std::string curvesCsv(const std::vector<RankDecayResult>& results);

}  // namespace tl::rankdecay
