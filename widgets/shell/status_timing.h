#pragma once
// The status bar's timing label: the precision the operator ran in, its time, and the views' draw time. A GPU
// result shows the device's own time (its uploads, kernels and downloads, as the result records it) in place of
// the CPU's compute time, so a user sees where a slider move's latency goes.
#include <QString>

#include "session/engine.h"

namespace tl {

struct StatusTiming {
  QString text, toolTip;
};

// E.g. "f64 · compute 3.2 ms · draw 8.1 ms" or "f32 · GPU 12.3 ms · draw 8.1 ms" (the primary run's result).
StatusTiming statusTiming(const SessionResult& result, double drawMs);

}  // namespace tl
