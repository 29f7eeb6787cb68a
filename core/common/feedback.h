#pragma once
// One progress/cancel object passed down from either front end (GUI or CLI) into long computations.
// Algorithms poll isCanceled() in their loops and report progress in [0, 1]; they never know who listens.
#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "common/errors.h"

namespace tl {

class Feedback {
 public:
  using ProgressFn = std::function<void(double fraction, const std::string& stage)>;

  Feedback() = default;
  explicit Feedback(ProgressFn onProgress) : onProgress_(std::move(onProgress)) {}
  // A part of a longer computation: canceled whenever `whole` is (and by its own cancel()), reporting to
  // its own listener (none: the part's progress is dropped, e.g. per-layer progress inside "image i/N").
  // `whole` must outlive the part.
  Feedback(const Feedback& whole, ProgressFn onProgress) : whole_(&whole), onProgress_(std::move(onProgress)) {}

  void cancel() { canceled_.store(true, std::memory_order_relaxed); }
  bool isCanceled() const {
    return canceled_.load(std::memory_order_relaxed) || (whole_ && whole_->isCanceled());
  }
  void throwIfCanceled() const {
    if (isCanceled()) throw Canceled();
  }

  // `stage` says in words what runs now ("image 12/1000", "epoch 2/10  step 40/469 ..."); the GUI shows it
  // beside the percentage, the CLI's status line (app/cli/terminal_progress.h) likewise.
  // Thread-safe; the listener decides how often to redraw.
  void setProgress(double fraction, const std::string& stage = {}) {
    if (!onProgress_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    onProgress_(fraction, stage);
  }

 private:
  std::atomic<bool> canceled_{false};
  const Feedback* whole_ = nullptr;
  ProgressFn onProgress_;
  std::mutex mutex_;
};

// For callers that neither report nor cancel (tests, one-off computations).
inline Feedback& noFeedback() {
  thread_local Feedback none;
  return none;
}

}  // namespace tl
