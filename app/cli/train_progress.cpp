#include "train_progress.h"

#include <algorithm>
#include <cmath>

namespace tl::cli {
namespace {

// Redrawing more often than this only costs terminal bandwidth.
constexpr std::chrono::milliseconds kRedrawInterval{100};

}  // namespace

std::string formatDuration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return text;
}

void TrainProgress::step(const TrainingProgress& p) {
  if (!terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (p.step != p.steps && now - lastDraw_ < kRedrawInterval) return;
  lastDraw_ = now;
  // \r returns to the line start and \033[K erases what a longer previous line left behind.
  std::fprintf(stream_, "\r\033[Kepoch %d/%d  step %d/%d  loss %.4f  acc %.1f%%  %.0f img/s  ETA %s", p.epoch,
               p.epochs, p.step, p.steps, p.loss, 100 * p.accuracy, p.imagesPerSecond,
               formatDuration(p.etaSeconds).c_str());
  std::fflush(stream_);
  lineShown_ = true;
}

void TrainProgress::epoch(const EpochMetrics& m, int epochs) {
  clearLine();
  std::fprintf(stream_, "epoch %d/%d  loss %.4f  train %.2f%%  test %.2f%%  %.1f s (+%.1f s eval)", m.epoch, epochs,
               m.trainLoss, 100 * m.trainAccuracy, 100 * m.testAccuracy, m.seconds, m.evalSeconds);
  if (m.sortTemp > 0) std::fprintf(stream_, "  sort_temp %.3g", m.sortTemp);
  std::fprintf(stream_, "\n");
  std::fflush(stream_);
}

void TrainProgress::clearLine() {
  if (!lineShown_) return;
  std::fprintf(stream_, "\r\033[K");
  std::fflush(stream_);
  lineShown_ = false;
}

}  // namespace tl::cli
