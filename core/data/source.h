#pragma once
// Where an AttentionInput comes from: a seeded synthetic generator, user .npy files, or one layer and head
// of a trained model on an image. Text form (CLI --source, one-line summaries):
//   synthetic:gaussian:n=256,d=64,seed=0
//   synthetic:cloud:shape=torus,n=300,seed=0
//   files:q=Q.npy,k=K.npy[,v=V.npy][,mask=M.npy]
//   model:checkpoint=DIR,image=fashion-mnist:test:0,layer=5,head=0   (see model/model_source.h)
#include <functional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/params.h"
#include "model/model_source.h"

namespace tl {

struct SourceSpec {
  enum class Kind { Synthetic, Files, Model };
  Kind kind = Kind::Synthetic;
  std::string generator = "gaussian";  // Synthetic: a name from syntheticGenerators()
  ParamSet params;                     // Synthetic: resolved generator parameters
  std::string q, k, v, mask;           // Files: paths (v and mask may be empty)
  ModelSourceSpec model;               // Model

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

// Generates or reads the input; validates it (shapes, NaN/Inf) with messages naming the file. Model sources
// run the checkpoint through the installed ModelBackend (model/model_backend.h).
AttentionInput<double> loadSource(const SourceSpec& spec);

struct ModelRun;
// The Q, K, V of the source's layer and head in a model run; InvalidArgument naming the valid range.
AttentionInput<double> attentionInputOf(const ModelRun& run, const ModelSourceSpec& spec);

}  // namespace tl
