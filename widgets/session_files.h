#pragma once
// Files the GUI reads and writes besides figures: the built-in default session and plan exports.
#include <string>

#include "common/matrix.h"
#include "session/session.h"

namespace tl {

// The session compiled into the resources (resources/default_session.json): a 3-D point-cloud source
// with Sinkhorn, so the app opens on a live transport plan.
Session defaultSession();

// Writes the plan (attention scale, rows = queries) as .npy (float64) or .csv, chosen by the extension.
// Atomic; throws InvalidArgument for other extensions and FileError when writing fails.
void exportPlan(const MatD& plan, const std::string& path);

}  // namespace tl
