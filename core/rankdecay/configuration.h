#pragma once
// The paper's four block configurations, applied at inference by editing the forward pass
// (docs/operators/rank-decay.md#configurations): skips removed by not adding the residual input, FFNs
// bypassed by not applying them (their LayerNorm with them).
#include <string>
#include <vector>

namespace tl::rankdecay {

enum class BlockConfig { San, SanSkip, SanFfn, Transformer };

// all: "no skip" removes the attention skip and the FFN's own skip; attention_only keeps the FFN skip
// (Dong et al.'s "SAN + MLP" surgery).
enum class SkipScope { All, AttentionOnly };

struct BlockSwitches {
  bool attentionSkip = false;
  bool ffn = false;
  bool ffnSkip = false;
};

BlockSwitches switchesFor(BlockConfig config, SkipScope scope);

// "san", "san+skip", "san+ffn", "transformer" (the CLI's --config values and the Session JSON's names).
const std::vector<std::string>& configNames();
std::string configName(BlockConfig config);
BlockConfig parseConfig(const std::string& name);  // InvalidArgument listing the names
SkipScope parseSkipScope(const std::string& name);  // "all" | "attention_only"

}  // namespace tl::rankdecay
