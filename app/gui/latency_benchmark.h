#pragma once
// `transportlens --measure-latency`: how long a change in the window takes to reach the screen, timed from
// the change until the window has drawn the new result in every view (the Engine's compute included).
//   cloud (default): a torus point cloud with n points and an operator (default Sinkhorn, T = 10) on a device;
//          one of the operator's sliders moves (default T, else its first numeric parameter): integers
//          through start + 1, + 4, + 7, …, reals across the slider's range
//   model: the bundled checkpoint session; the layer and head pickers and the operator's T slider change in
//          turn, and each move is timed until the [CLS] maps, the prediction and the plan show it.
// Both run in the built-in sessions' precision (float32) unless --precision says otherwise; the report names
// the precision, the threads and the load average before and after, so a figure never travels without them.
#include <QString>
#include <optional>

#include "ops/backend.h"
#include "session/session.h"

namespace tl {

enum class LatencyScenario { Cloud, Model };

struct LatencyOptions {
  LatencyScenario scenario = LatencyScenario::Cloud;
  int n = 512;  // cloud only
  QString op = "sinkhorn:T=10";  // cloud only: the operator
  QString param;                 // cloud only: the parameter whose slider moves; empty: T, else the first numeric
  DeviceChoice device = DeviceChoice::Cpu;
  std::optional<Precision> precision;  // empty: the built-in session's
  int moves = 30;
  QString jsonPath;  // also write the report here (atomically); empty: stdout only
};

// Prints the JSON report to stdout; returns the process exit code.
int runLatencyBenchmark(const LatencyOptions& options);

}  // namespace tl
