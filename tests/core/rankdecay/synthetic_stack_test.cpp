// Synthetic stacks (docs/operators/rank-decay.md#synthetic-stacks): pure-SAN collapse and skip protection
// over 100 seeds (O-15, O-16), configurations, LayerNorm, determinism (also across thread counts).
#include "rankdecay/synthetic_stack.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "common/parallel.h"
#include "ops/registry.h"
#include "rankdecay/box_summary.h"
#include "rankdecay/residual.h"
#include "rankdecay/result_json.h"
#include "rankdecay/rank_decay_test_util.h"

namespace tl::rankdecay {
namespace {

// ρ_out per seed at one layer.
std::vector<double> rhoAt(const StackRun& run, int layer) {
  std::vector<double> rho;
  for (const auto& sample : run.record.outputs) rho.push_back(outputResidualRatio(sample[size_t(layer)]));
  return rho;
}

double fractionBelow(const std::vector<double>& values, double threshold) {
  return double(std::count_if(values.begin(), values.end(), [&](double v) { return v < threshold; })) /
         double(values.size());
}

TEST(SyntheticStack, PureSanCollapsesDoublyExponentially) {  // O-15
  StackSpec spec;  // the defaults: n 32, d 64, H 4, no LayerNorm; 5 of the 12 layers are enough here
  spec.layers = 5;
  const StackRun sinkhorn = runSyntheticStack(*makeOperator("sinkhorn:T=50"), spec, 0, 100, noFeedback());
  EXPECT_GE(fractionBelow(rhoAt(sinkhorn, 3), 1e-6), 0.95);
  EXPECT_GE(fractionBelow(rhoAt(sinkhorn, 5), 1e-12), 0.95);
  for (const auto& sample : sinkhorn.record.outputs) {  // non-increasing until the floor
    for (size_t l = 1; l < sample.size(); ++l) {
      const double before = outputResidualRatio(sample[l - 1]), now = outputResidualRatio(sample[l]);
      if (before < 1e-13) break;
      EXPECT_LE(now, before);
    }
  }
  const StackRun softmax = runSyntheticStack(*makeOperator("softmax"), spec, 0, 100, noFeedback());
  EXPECT_GE(fractionBelow(rhoAt(softmax, 3), 1e-5), 0.95);
}

TEST(SyntheticStack, SkipConnectionsPreventFastCollapse) {  // O-16
  StackSpec spec;
  spec.layers = 8;
  spec.config = BlockConfig::SanSkip;
  for (const char* op : {"sinkhorn:T=50", "softmax"}) {
    const StackRun run = runSyntheticStack(*makeOperator(op), spec, 0, 100, noFeedback());
    const std::vector<double> rho8 = rhoAt(run, 8);
    EXPECT_LE(fractionBelow(rho8, 1e-3), 0.05) << op;
  }
}

TEST(SyntheticStack, ConfigurationsShareWeightsAndDifferInTheForwardOnly) {
  StackSpec spec;
  spec.n = 8;
  spec.width = 16;
  spec.heads = 2;
  spec.layers = 3;
  const auto op = makeOperator("softmax");
  std::vector<MatD> layerOne;
  for (BlockConfig config : {BlockConfig::San, BlockConfig::SanSkip, BlockConfig::SanFfn, BlockConfig::Transformer}) {
    spec.config = config;
    const StackRun run = runSyntheticStack(*op, spec, 5, 1, noFeedback());
    ASSERT_EQ(run.record.outputs[0].size(), 4u);
    // Same input and the same first attention matrices (computed from the shared input and weights).
    EXPECT_EQ(run.record.outputs[0][0], runSyntheticStack(*op, spec, 5, 1, noFeedback()).record.outputs[0][0]);
    layerOne.push_back(run.record.at(0, 0, 0));
    if (config == BlockConfig::San) {
      EXPECT_TRUE(run.theory[0].dataBound.size() == 3u);
    } else {
      EXPECT_TRUE(run.theory[0].dataBound.empty() && run.theory[0].layers.empty());
    }
  }
  for (const MatD& P : layerOne) EXPECT_EQ(P, layerOne[0]);
  // Outputs after layer 1 differ between configurations.
  spec.config = BlockConfig::San;
  const MatD san = runSyntheticStack(*op, spec, 5, 1, noFeedback()).record.outputs[0][1];
  spec.config = BlockConfig::SanSkip;
  const MatD skip = runSyntheticStack(*op, spec, 5, 1, noFeedback()).record.outputs[0][1];
  EXPECT_LE((skip - san - runSyntheticStack(*op, spec, 5, 1, noFeedback()).record.outputs[0][0]).cwiseAbs().maxCoeff(),
            1e-12);  // X1 = X + SA(X)
}

TEST(SyntheticStack, PreNormKeepsTokensAtUnitScale) {
  StackSpec spec;
  spec.layers = 6;
  spec.layerNorm = LayerNormPlace::Post;
  spec.config = BlockConfig::Transformer;
  const StackRun run = runSyntheticStack(*makeOperator("sinkhorn:T=50"), spec, 1, 2, noFeedback());
  for (const auto& sample : run.record.outputs)
    for (size_t l = 1; l < sample.size(); ++l)  // post-norm outputs: every token has mean 0, variance ≈ 1
      EXPECT_NEAR(sample[l].row(0).squaredNorm() / double(spec.width), 1.0, 1e-3);
}

TEST(SyntheticStack, RejectsBadSpecsWithTheParameterName) {
  StackSpec spec;
  spec.width = 30;
  spec.heads = 4;
  try {
    runSyntheticStack(*makeOperator("softmax"), spec, 0, 1, noFeedback());
    FAIL() << "d not a multiple of H must be refused";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of H"), std::string::npos);
  }
}

// Networks and paths run in parallel, each writing its own slot: one thread and two give the same numbers,
// bit for bit, curves and theory alike.
TEST(SyntheticStack, ResultsDoNotDependOnTheThreadCount) {
  RankDecayRequest request;
  request.source = parseRankDecaySource("stack:n=12,d=16,H=2,L=4");
  request.operators = {OperatorRegistry::builtin().parse("softmax"), OperatorRegistry::builtin().parse("sinkhorn:T=50")};
  request.seeds = 5;
  request.paths.paths = 30;
  const int threads = parallelThreads();
  setParallelThreads(1);
  const std::string one = toJson(runRankDecay(request, noFeedback())).dump();
  setParallelThreads(2);
  const std::string two = toJson(runRankDecay(request, noFeedback())).dump();
  setParallelThreads(threads);
  EXPECT_EQ(one, two);
}

TEST(SyntheticStack, CancelStopsTheRun) {
  Feedback feedback;
  feedback.cancel();
  EXPECT_THROW(runSyntheticStack(*makeOperator("softmax"), StackSpec{}, 0, 5, feedback), Canceled);
}

}  // namespace
}  // namespace tl::rankdecay
