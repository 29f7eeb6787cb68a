#pragma once
// Files the GUI reads and writes besides figures: the built-in default session and plan exports.
#include <string>

#include "common/matrix.h"
#include "session/session.h"

namespace tl {

// The sessions compiled into the resources. pointCloudSession (resources/cloud_session.json): a torus with
// Sinkhorn, a live transport plan drawn in 3-D. checkpointSession (resources/checkpoint_session.json): the
// bundled softmax ViT (sample_checkpoints/softmax, found through the source tree) on a Fashion-MNIST test
// image, with Sinkhorn swapped into the chosen layer: real [CLS] maps and predictions.
Session pointCloudSession();
Session checkpointSession();
// What the app opens with no arguments: the checkpoint session when this build runs models and the sample
// checkpoint is there, otherwise the point-cloud session (which needs nothing but the build).
Session defaultSession();

// Writes the plan (attention scale, rows = queries) as .npy (float64) or .csv, chosen by the extension.
// Atomic; throws InvalidArgument for other extensions and FileError when writing fails.
void exportPlan(const MatD& plan, const std::string& path);

}  // namespace tl
