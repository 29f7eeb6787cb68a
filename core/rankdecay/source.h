#pragma once
// Where a rank-decay run takes its attention from (docs/cli.md#rank-decay): text of the form
// "stack:n=32,d=64,H=4,L=12,scale=1,ln=none", "random:n=50,s=1,L=24,skip=0" or
// "model:checkpoint=DIR,images=fashion-mnist:test:0-99". Each kind's parameters are a schema, so parsing,
// range checks and --help come from one declaration. Here (as in the contract) `d` is the model
// width and `L` the number of layers, or the largest path depth for random matrices.
#include <string>

#include "common/params.h"
#include "rankdecay/random_matrices.h"
#include "rankdecay/synthetic_stack.h"

namespace tl::rankdecay {

enum class SourceKind { Stack, Random, Model };

struct RankDecaySource {
  SourceKind kind = SourceKind::Stack;
  ParamSet params;  // resolved against the kind's schema

  std::string toString() const;  // "stack:n=32,d=64,..." (every parameter, schema order)
};

const ParamSchema& stackSchema();
const ParamSchema& randomSchema();
const ParamSchema& modelSchema();
std::string sourceKindName(SourceKind kind);  // stack | random | model

// InvalidArgument naming the kind or parameter at fault.
RankDecaySource parseRankDecaySource(const std::string& text);

StackSpec stackSpec(const RankDecaySource& source, BlockConfig config);
RandomMatrixSpec randomSpec(const RankDecaySource& source);

// Text block for --help: every kind with its parameters.
std::string describeRankDecaySources();

}  // namespace tl::rankdecay
