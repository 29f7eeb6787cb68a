#include "rankdecay/configuration.h"

#include "common/errors.h"

namespace tl::rankdecay {

BlockSwitches switchesFor(BlockConfig config, SkipScope scope) {
  BlockSwitches s;
  s.attentionSkip = config == BlockConfig::SanSkip || config == BlockConfig::Transformer;
  s.ffn = config == BlockConfig::SanFfn || config == BlockConfig::Transformer;
  s.ffnSkip = s.ffn && (s.attentionSkip || scope == SkipScope::AttentionOnly);
  return s;
}

const std::vector<std::string>& configNames() {
  static const std::vector<std::string> names = {"san", "san+skip", "san+ffn", "transformer"};
  return names;
}

std::string configName(BlockConfig config) { return configNames()[size_t(config)]; }

BlockConfig parseConfig(const std::string& name) {
  for (size_t i = 0; i < configNames().size(); ++i)
    if (configNames()[i] == name) return BlockConfig(i);
  throw InvalidArgument("unknown configuration '" + name + "'; expected san, san+skip, san+ffn or transformer");
}

SkipScope parseSkipScope(const std::string& name) {
  if (name == "all") return SkipScope::All;
  if (name == "attention_only") return SkipScope::AttentionOnly;
  throw InvalidArgument("unknown skip_scope '" + name + "'; expected all or attention_only");
}

}  // namespace tl::rankdecay
