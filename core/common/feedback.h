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

  void cancel() { canceled_.store(true, std::memory_order_relaxed); }
  bool isCanceled() const { return canceled_.load(std::memory_order_relaxed); }
  void throwIfCanceled() const {
    if (isCanceled()) throw Canceled();
  }

  // Thread-safe; the listener decides how often to redraw.
  void setProgress(double fraction, const std::string& stage = {}) {
    if (!onProgress_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    onProgress_(fraction, stage);
  }

 private:
  std::atomic<bool> canceled_{false};
  ProgressFn onProgress_;
  std::mutex mutex_;
};

// For callers that neither report nor cancel (tests, one-off computations).
inline Feedback& noFeedback() {
  thread_local Feedback none;
  return none;
}

}  // namespace tl
