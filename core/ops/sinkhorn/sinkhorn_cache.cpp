#include "ops/sinkhorn/sinkhorn_cache.h"

#include <utility>

#include "ops/log_domain.h"

namespace tl {

template <class T>
void SinkhornCache<T>::bindTo(std::shared_ptr<const void> input) {
  if (input == input_) return;
  clear();
  input_ = std::move(input);
}

template <class T>
void SinkhornCache<T>::clear() {
  maskMode_.reset();
  S_.reset();
  X_.reset();
  state_ = {};
}

template <class T>
void SinkhornCache<T>::startRun(MaskMode maskMode) {
  reuse_ = {};
  if (maskMode_ != maskMode) {
    clear();  // keeps the bound input: the same tokens, another sub-problem
    maskMode_ = maskMode;
  }
}

template <class T>
const DenseScores<T>& SinkhornCache<T>::scaledScores(const AttentionInput<T>& in, double eps) {
  reuse_.scores = S_.has_value();
  if (!S_) S_ = scores(in.Q, in.K);
  reuse_.scaledScores = X_ && eps_ == eps;
  if (!reuse_.scaledScores) {
    X_.reset();
    state_ = {};  // a loop on other scores
    X_.emplace(*S_, T(eps));
    eps_ = eps;
  }
  return *X_;
}

template <class T>
const SinkhornLoopState<T>* SinkhornCache<T>::resumeFrom(int budget) {
  if (state_.steps == 0 || state_.steps > budget) return nullptr;
  reuse_.resumedSteps = state_.steps;
  return &state_;
}

template <class T>
void SinkhornCache<T>::keep(const Vec<T>& ut, const Vec<T>& vt, const PlanResult<T>& r) {
  state_.steps = int(r.errorHistory.size());
  state_.ut = ut;
  state_.vt = vt;
  state_.uHistory = r.uHistory;
  state_.vHistory = r.vHistory;
  state_.errorHistory = r.errorHistory;
}

template class SinkhornCache<float>;
template class SinkhornCache<double>;

}  // namespace tl
