#pragma once
// Seeded synthetic inputs, listed by name in syntheticGenerators() so sources, the CLI and the GUI enumerate one
// table.
#include <functional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/params.h"

namespace tl {

// Gaussian queries/keys: `clusters` centres drawn N(0, I_d); each token = its centre + spread·N(0, I_d);
// keys are shifted by `offset` along the all-ones direction (normalised). V ~ N(0, I_d).
AttentionInput<double> generateGaussian(const ParamSet& params);
ParamSchema gaussianSchema();

// 3-D point clouds: queries and keys are two independent samples of the same shape, each ordered along
// the shape, so a plan can be drawn in space and local transport shows as a band in the heatmap; keys
// translated by `offset` along x; V = K, so the output A·V is where each query is transported to (its
// barycentric projection).
AttentionInput<double> generateCloud(const ParamSet& params);
ParamSchema cloudSchema();

struct GeneratorInfo {
  std::string name;   // "gaussian", "cloud"
  std::string title;
  std::string description;
  ParamSchema schema;
  bool pointCloud = false;
  std::function<AttentionInput<double>(const ParamSet&)> generate;  // deterministic given params (seed)
};

const std::vector<GeneratorInfo>& syntheticGenerators();
const GeneratorInfo& syntheticGenerator(const std::string& name);  // throws InvalidArgument

}  // namespace tl
