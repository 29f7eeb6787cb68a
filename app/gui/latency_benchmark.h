#pragma once
// `transportlens --measure-latency`: how long a slider move takes to reach the screen. Opens the window on
// a point-cloud source with n points and Sinkhorn, moves the T slider through a series of values, and
// times each move from the slider change until the heatmap has redrawn the new result.
#include <QString>

namespace tl {

struct LatencyOptions {
  int n = 512;
  int moves = 30;
  QString jsonPath;  // also write the report here (atomically); empty: stdout only
};

// Prints the JSON report to stdout; returns the process exit code.
int runLatencyBenchmark(const LatencyOptions& options);

}  // namespace tl
