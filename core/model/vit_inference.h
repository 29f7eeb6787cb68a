#pragma once
// Running a ViT checkpoint on one image and looking inside it, with plain std/Eigen types only (no LibTorch
// here), so the CLI and the Qt views can include it.
//   run()   : logits, and per layer the block output and per head Q, K, V and the attention plan the
//             model's own normaliser produced (float32 model, values widened to double).
//   rerun() : the same from layer ℓ on, with core registry operators (the CPU reference in double, or the
//             GPU in float32 when asked) in place of the normaliser at chosen layers; the other layers keep
//             the model's own.
// Q and K are stored unscaled, exactly as the core operators take them (they apply S = QKᵀ/√d and eps
// themselves), so any head's AttentionInput can be handed to any registry operator directly.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "io/checkpoint/tensor_map.h"
#include "ops/plan_result.h"
#include "ops/registry.h"
#include "vit/vit_checkpoint.h"
#include "vit/vit_trace.h"

namespace tl {

class VitRunner {
 public:
  explicit VitRunner(const VitCheckpoint& checkpoint);
  // openVitCheckpoint(path, options) then the model, its weights decoded straight from the mapped file into the
  // parameters; `feedback` hears the load's progress and may cancel it.
  static VitRunner open(const std::string& path, const VitImportOptions& options = {},
                        Feedback& feedback = noFeedback());
  ~VitRunner();
  VitRunner(VitRunner&&) noexcept;
  VitRunner& operator=(VitRunner&&) noexcept;

  const VitConfig& config() const;
  VitCheckpoint checkpoint() const;

  // `image`: C×H×W pixels in [0, 1] (HF's rescale already applied); normalised here with the config's
  // image_mean/image_std. InvalidArgument when the shape does not fit the config.
  VecD logits(const HostTensor& image) const;
  VitTrace run(const HostTensor& image, Feedback& feedback = noFeedback()) const;

  // Layers < fromLayer are copied from `base`; from there on, layer l runs the core operator swaps[l] when
  // given, else the model's own normaliser. LOT at a layer with learned pivots uses them (and their
  // count as r) when the spec leaves pivot_init at auto and names no pivots file. InvalidArgument for a
  // layer index out of range.
  // `device` chooses where the swapped operators run (session/backend_choice.h): on the GPU the heads of a
  // swapped layer run in one launch.
  VitTrace rerun(const VitTrace& base, int fromLayer, const std::map<int, OperatorSpec>& swaps,
                 Feedback& feedback = noFeedback(), DeviceChoice device = DeviceChoice::Cpu) const;

 private:
  struct Impl;
  explicit VitRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl
