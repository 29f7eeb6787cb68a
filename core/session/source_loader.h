#pragma once
// The one source loader: every source kind (synthetic generator, .npy files, a model checkpoint's layer and
// head), with progress and cancellation through Feedback. The CLI, the Engine behind the GUI and
// `tlens render` all load through it, so a source means the same input everywhere.
#include <memory>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "session/source.h"
#include "vit/model_backend.h"

namespace tl {

// What a source loads to: the attention input, and for model sources the model run it was taken from.
struct LoadedSource {
  std::shared_ptr<const AttentionInput<double>> input;
  std::shared_ptr<const ModelRun> model;  // empty unless the source is a model

  const AttentionInput<double>& attention() const { return *input; }
};

// Generates, reads or runs the source and validates the input (shapes, NaN/Inf), naming the file that holds
// an offending tensor. Model sources run through the installed ModelBackend (vit/model_backend.h).
// Throws InvalidArgument, FileError, or Canceled when `feedback` is cancelled.
LoadedSource loadSource(const SourceSpec& spec, Feedback& feedback = noFeedback());

// The Q, K, V of the source's layer and head in a model run; InvalidArgument naming the valid range.
AttentionInput<double> attentionInputOf(const ModelRun& run, const ModelSourceSpec& spec);

}  // namespace tl
