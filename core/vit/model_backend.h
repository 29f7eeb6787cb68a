#pragma once
// The seam between the parts of TransportLens that know nothing of LibTorch (sources, sessions, the Engine,
// the views) and the model layer that runs ViT checkpoints (tl_model). A build with LibTorch installs a
// backend at start-up (installVitModelBackend() in model/vit_model_backend.h); without one, model sources
// fail with a clear message instead of a link error.
#include <map>
#include <memory>
#include <string>

#include "common/feedback.h"
#include "ops/asap/compile_options.h"
#include "ops/asap/compiled_asap.h"
#include "ops/registry.h"
#include "vit/model_image.h"
#include "vit/model_source.h"
#include "vit/vit_trace.h"

namespace tl {

// One checkpoint run on one image, as the views show it.
struct ModelRun {
  std::string checkpoint;
  VitConfig config;
  ModelImage image;
  VitTrace trace;  // the model with its own normaliser
};

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // Loads (or reuses) the checkpoint and runs it on the image. FileError/InvalidArgument as the readers say.
  virtual std::shared_ptr<const ModelRun> run(const ModelSourceSpec& source, Feedback& feedback) = 0;
  // `base` again from `fromLayer` on, with core operators at the layers in `swaps` (VitRunner::rerun).
  // `device`: where the swapped operators run (session/backend_choice.h).
  virtual VitTrace rerun(const ModelRun& base, int fromLayer, const std::map<int, OperatorSpec>& swaps,
                         Feedback& feedback, DeviceChoice device) = 0;
  // Compiles the checkpoint's Sinkhorn layers into ASAP and saves the result in options.out
  // (model/asap_compiler.h): the GUI's "Compile this checkpoint…" runs it off its own thread.
  virtual CompiledAsap compileAsap(const std::string& checkpoint, const AsapCompileOptions& options,
                                   Feedback& feedback) = 0;
};

void installModelBackend(std::shared_ptr<ModelBackend> backend);
// The installed backend; throws Error saying the build has no model layer when there is none.
ModelBackend& modelBackend();
bool haveModelBackend();

}  // namespace tl
