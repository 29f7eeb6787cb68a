#pragma once
// The progress display of `tlens train` on stderr. On a terminal one status line is redrawn in place (epoch,
// step/steps, running loss and accuracy, images/s, ETA) and every finished epoch leaves a summary line;
// elsewhere (logs, pipes, CI) only the summary lines are printed, one per epoch.
#include <chrono>
#include <cstdio>
#include <string>

#include "model/training/training_run.h"

namespace tl::cli {

class TrainProgress {
 public:
  TrainProgress(std::FILE* stream, bool terminal) : stream_(stream), terminal_(terminal) {}

  void step(const TrainingProgress& p);
  void epoch(const EpochMetrics& m, int epochs);
  void clearLine();  // before other messages, so they do not land inside the status line

 private:
  std::FILE* stream_;
  bool terminal_;
  bool lineShown_ = false;
  std::chrono::steady_clock::time_point lastDraw_{};
};

// "45s", "3m12s", "1h02m".
std::string formatDuration(double seconds);

}  // namespace tl::cli
