#include "rankdecay/settings.h"

#include "common/errors.h"

namespace tl::rankdecay {

nlohmann::json RankDecaySettings::toJson() const {
  nlohmann::json names = nlohmann::json::array();
  for (BlockConfig c : configs) names.push_back(configName(c));
  return {{"source", source},
          {"configs", names},
          {"paths", paths},
          {"seeds", seeds},
          {"order", order == ProductOrder::Literal ? "literal" : "network"},
          {"sample_per_layer", samplePerLayer},
          {"seed", seed}};
}

RankDecaySettings RankDecaySettings::fromJson(const nlohmann::json& json) {
  RankDecaySettings s;
  if (!json.is_object()) throw InvalidArgument("session: rank_decay must be an object");
  try {
    s.source = json.value("source", s.source);
    parseRankDecaySource(s.source);  // refuse a bad source when the session is read
    if (json.contains("configs")) {
      s.configs.clear();
      for (const auto& name : json.at("configs")) s.configs.push_back(parseConfig(name.get<std::string>()));
      if (s.configs.empty()) throw InvalidArgument("session: rank_decay.configs is empty");
    }
    s.paths = json.value("paths", s.paths);
    s.seeds = json.value("seeds", s.seeds);
    if (s.paths < 1 || s.seeds < 1) throw InvalidArgument("session: rank_decay.paths and .seeds must be ≥ 1");
    const std::string order = json.value("order", std::string("literal"));
    if (order != "literal" && order != "network")
      throw InvalidArgument("session: rank_decay.order must be literal or network, not '" + order + "'");
    s.order = order == "literal" ? ProductOrder::Literal : ProductOrder::Network;
    s.samplePerLayer = json.value("sample_per_layer", s.samplePerLayer);
    s.seed = json.value("seed", s.seed);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(std::string("session: rank_decay has a value of the wrong type (") + e.what() + ")");
  }
  return s;
}

std::vector<RankDecayResult> runRankDecaySettings(const RankDecaySettings& settings,
                                                  const std::vector<OperatorSpec>& operators, Feedback& feedback) {
  RankDecayRequest request;
  request.source = parseRankDecaySource(settings.source);
  request.operators = operators;
  request.paths.paths = settings.paths;
  request.paths.order = settings.order;
  request.paths.samplePerLayer = settings.samplePerLayer;
  request.paths.seed = settings.seed;
  request.seeds = settings.seeds;
  request.wantOutputs = request.source.kind != SourceKind::Random;
  // Random matrices have no network: one result, whatever the configurations.
  const std::vector<BlockConfig> configs =
      request.source.kind == SourceKind::Random ? std::vector<BlockConfig>{BlockConfig::San} : settings.configs;
  std::vector<RankDecayResult> results;
  for (size_t i = 0; i < configs.size(); ++i) {
    request.config = configs[i];
    Feedback part(feedback, [&](double f, const std::string& stage) {
      feedback.setProgress((double(i) + f) / double(configs.size()), configName(configs[i]) + " · " + stage);
    });
    results.push_back(runRankDecay(request, part));
  }
  return results;
}

}  // namespace tl::rankdecay
