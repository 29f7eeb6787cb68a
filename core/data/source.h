#pragma once
// Where an AttentionInput comes from: a seeded synthetic generator or user .npy files.
// Text form (CLI --source, one-line summaries):
//   synthetic:gaussian:n=256,d=64,seed=0
//   synthetic:cloud:shape=torus,n=300,seed=0
//   files:q=Q.npy,k=K.npy[,v=V.npy][,mask=M.npy]
#include <functional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/params.h"

namespace tl {

struct SourceSpec {
  enum class Kind { Synthetic, Files };
  Kind kind = Kind::Synthetic;
  std::string generator = "gaussian";  // Synthetic: a name from syntheticGenerators()
  ParamSet params;                     // Synthetic: resolved generator parameters
  std::string q, k, v, mask;           // Files: paths (v and mask may be empty)

  static SourceSpec parse(const std::string& text);
  std::string toString() const;
  bool isPointCloud() const;  // Q and K are 3-D points that a 3-D view can draw
};

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

// Generates or reads the input; validates it (shapes, NaN/Inf) with messages naming the file.
AttentionInput<double> loadSource(const SourceSpec& spec);

}  // namespace tl
