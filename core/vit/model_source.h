#pragma once
// A source of attention inputs that is a trained model: a checkpoint, the image it runs on, and the layer
// and head whose Q, K, V the operators take. Text form (CLI --source, sessions' one-line summaries):
//   model:checkpoint=sample_checkpoints/softmax,image=fashion-mnist:test:0,layer=5,head=1
#include <string>

#include "vit/model_image.h"

namespace tl {

struct ModelSourceSpec {
  std::string checkpoint;  // folder or weights file (readVitCheckpoint)
  ImageSource image;
  int layer = 0, head = 0;

  // The part after "model:"; InvalidArgument naming the key for anything malformed.
  static ModelSourceSpec parse(const std::string& keyValues);
  std::string toString() const;  // without the "model:" prefix
};

}  // namespace tl
