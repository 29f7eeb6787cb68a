#pragma once
// The one progress listener of `tlens`: a Feedback whose listener keeps a status line "<stage>  <percent>"
// on stderr, redrawn in place ("\r", erased to the end of the line) at most every 100 ms and at 100 %, and
// ended with a newline when the command finishes (or fails: the error then starts a line of its own). It
// draws only where stderr is a terminal unless asked (Draw::Always), so logs, pipes and tests see nothing.
// InterruptScope makes Ctrl-C cancel that same Feedback: the computation stops at its next check and
// throws Canceled (exit 1, "canceled") or, for `tlens train`, returns stopped (exit 130).
#include <chrono>
#include <cstdio>
#include <string>

#include "common/feedback.h"

namespace tl::cli {

class TerminalProgress {
 public:
  enum class Draw { Auto, Always, Never };  // Auto: only when `stream` is a terminal

  explicit TerminalProgress(Draw draw = Draw::Auto, std::FILE* stream = stderr);
  ~TerminalProgress();  // finish()
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  // What the command hands to core.
  Feedback& feedback() { return feedback_; }
  bool drawing() const { return draw_; }

  // Erases the status line, so that other output (a summary line, a message) starts at the line's start;
  // the next progress report draws it again.
  void clearLine();
  // Ends a drawn status line with a newline; nothing when none is shown.
  void finish();

 private:
  void draw(double fraction, const std::string& stage);

  std::FILE* stream_;
  bool draw_;
  bool lineShown_ = false;
  std::chrono::steady_clock::time_point lastDraw_{};
  Feedback feedback_;
};

// While it lives, SIGINT (Ctrl-C) calls feedback.cancel(); a second Ctrl-C ends the process at once. The
// previous handler comes back when it ends; a process that started with SIGINT ignored keeps ignoring it.
// One scope at a time.
class InterruptScope {
 public:
  explicit InterruptScope(Feedback& feedback);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  void (*previous_)(int);
};

}  // namespace tl::cli
