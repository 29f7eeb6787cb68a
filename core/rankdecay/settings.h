#pragma once
// What a Session asks of rank decay (its "rank_decay" block; docs/formats.md#sessions): the source, the
// configurations to compute and the path options. The operators are the session's own, so changing an
// operator or its parameters in the GUI recomputes the curves. The Engine runs it when the session shows the
// Rank decay view; every configuration listed is computed, so toggling those in the view only redraws.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rankdecay/experiment.h"

namespace tl::rankdecay {

struct RankDecaySettings {
  std::string source = "stack:n=32,d=64,H=4,L=12,scale=1,ln=none";
  // Computed configurations; the view draws those ticked and asks for the others when they are ticked.
  std::vector<BlockConfig> configs{BlockConfig::San, BlockConfig::SanSkip};
  int paths = 100;
  int seeds = 20;
  ProductOrder order = ProductOrder::Literal;
  bool samplePerLayer = false;
  uint64_t seed = 0;

  nlohmann::json toJson() const;
  // Absent keys keep their defaults; wrong values throw InvalidArgument naming the key.
  static RankDecaySettings fromJson(const nlohmann::json& json);
};

// One result per configuration, in the order of settings.configs: paths and outputs (random: paths only).
std::vector<RankDecayResult> runRankDecaySettings(const RankDecaySettings& settings,
                                                  const std::vector<OperatorSpec>& operators, Feedback& feedback);

}  // namespace tl::rankdecay
