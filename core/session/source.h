#pragma once
// Where an AttentionInput comes from (loaded by session/source_loader.h): a seeded synthetic generator, user .npy files, or one layer and head
// of a trained model on an image. Text form (CLI --source, one-line summaries):
//   synthetic:gaussian:n=256,d=64,seed=0
//   synthetic:cloud:shape=torus,n=300,seed=0
//   files:q=Q.npy,k=K.npy[,v=V.npy][,mask=M.npy]
//   model:checkpoint=DIR,image=fashion-mnist:test:0,layer=5,head=0   (see vit/model_source.h)
#include <string>

#include "common/params.h"
#include "vit/model_source.h"

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

}  // namespace tl
