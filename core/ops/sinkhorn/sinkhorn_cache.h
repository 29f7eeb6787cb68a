#pragma once
// What a live session keeps between Sinkhorn runs on one input, so that a slider move recomputes only what
// changed (docs/gui.md#live-updates):
//   - a T change reuses the scaled scores X = S/eps and, when T grows, continues the loop from its state at the
//     old T: the steps after it are the ones a fresh run takes, so the result is bit for bit the fresh one;
//   - an eps change reuses the scores S = QKᵀ/√d and divides them again;
//   - another input (source, Q, K or mask changed: the caller binds a new one) or another mask mode (which
//     runs on other tokens) drops everything.
// sinkhornAttention (sinkhorn.h) takes one; the Engine keeps one per precision for the primary operator. One
// thread uses it at a time.
#include <memory>
#include <optional>

#include "common/attention_input.h"
#include "ops/mask_mode.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_loop.h"

namespace tl {

template <class T>
class SinkhornCache {
 public:
  // The input the next runs are on; any other than the bound one drops what was kept. The cache holds it, so
  // its address cannot come back as another input's.
  void bindTo(std::shared_ptr<const void> input);

  // What the last run took from the cache (tests and benchmarks check that the reuse happens).
  struct Reuse {
    bool scores = false;        // S = QKᵀ/√d
    bool scaledScores = false;  // X = S/eps
    int resumedSteps = 0;       // single normalisations not recomputed
  };
  const Reuse& lastReuse() const { return reuse_; }

  // The steps of one run, called by sinkhornAttention in this order.
  void startRun(MaskMode maskMode);
  // X for `in`: the bound input, or its valid sub-sequence, which the bound input fixes.
  const DenseScores<T>& scaledScores(const AttentionInput<T>& in, double eps);
  // The state to continue from with this budget; nullptr: start from u = v = 0.
  const SinkhornLoopState<T>* resumeFrom(int budget);
  // The loop's state after a finished run on the current X.
  void keep(const Vec<T>& ut, const Vec<T>& vt, const PlanResult<T>& r);

 private:
  void clear();

  std::shared_ptr<const void> input_;
  std::optional<MaskMode> maskMode_;
  std::optional<Mat<T>> S_;
  double eps_ = 0;
  std::optional<DenseScores<T>> X_;  // S_/eps_
  SinkhornLoopState<T> state_;       // after the last finished run on X_
  Reuse reuse_;
};

}  // namespace tl
