#include "terminal_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>

namespace tl::cli {
namespace {

// Redrawing more often than this only costs terminal bandwidth.
constexpr std::chrono::milliseconds kRedrawInterval{100};

bool shouldDraw(TerminalProgress::Draw draw, std::FILE* stream) {
  if (draw == TerminalProgress::Draw::Auto) return isatty(fileno(stream)) != 0;
  return draw == TerminalProgress::Draw::Always;
}

// Storing to a lock-free std::atomic<bool> (Feedback::cancel) and signal() are async-signal-safe.
Feedback* interruptTarget = nullptr;

extern "C" void onInterrupt(int) {
  if (interruptTarget) interruptTarget->cancel();
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace

TerminalProgress::TerminalProgress(Draw draw, std::FILE* stream)
    : stream_(stream), draw_(shouldDraw(draw, stream)),
      feedback_([this](double fraction, const std::string& stage) { this->draw(fraction, stage); }) {}

TerminalProgress::~TerminalProgress() { finish(); }

void TerminalProgress::draw(double fraction, const std::string& stage) {
  if (!draw_) return;
  const auto now = std::chrono::steady_clock::now();
  if (fraction < 1 && now - lastDraw_ < kRedrawInterval) return;
  lastDraw_ = now;
  // \r returns to the line start and \033[K erases what a longer previous line left behind.
  const double percent = std::floor(1000 * std::clamp(fraction, 0.0, 1.0)) / 10;
  std::fprintf(stream_, "\r\033[K%s  %.1f%%", stage.c_str(), percent);
  std::fflush(stream_);
  lineShown_ = true;
}

void TerminalProgress::clearLine() {
  if (!lineShown_) return;
  std::fprintf(stream_, "\r\033[K");
  std::fflush(stream_);
  lineShown_ = false;
}

void TerminalProgress::finish() {
  if (!lineShown_) return;
  std::fprintf(stream_, "\n");
  std::fflush(stream_);
  lineShown_ = false;
}

InterruptScope::InterruptScope(Feedback& feedback) {
  interruptTarget = &feedback;
  previous_ = std::signal(SIGINT, onInterrupt);
  if (previous_ == SIG_IGN) std::signal(SIGINT, SIG_IGN);  // started ignoring it (nohup, `cmd &` in a script)
}

InterruptScope::~InterruptScope() {
  std::signal(SIGINT, previous_);
  interruptTarget = nullptr;
}

}  // namespace tl::cli
