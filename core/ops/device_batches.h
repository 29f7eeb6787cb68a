#pragma once
// How a family's CUDA path turns a list of heads into launches, shared by every family: heads of equal shape
// and equal mask (the heads of one model layer) run as one batch (batch = B·H); others run one by one. The
// mask mode is applied as the CPU reference applies it: `keep-queries` hands the key mask to the launch
// (padded keys carry no mass), `subsequence` compacts the valid tokens of the batch and scatters each result
// back (ops/subsequence.h).
#include <functional>
#include <optional>
#include <vector>

#include "common/attention_input.h"
#include "cuda/attention_problem.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

// One launch: heads of equal shape; keyMask is set only for keep-queries with padding. A result per head.
using DeviceLaunch =
    std::function<std::vector<PlanResult<float>>(const AttentionBatch<float>& heads, const std::optional<Mask>& keyMask)>;

// Whether two heads carry the same mask (or none): heads that do share a launch and its compaction.
bool sameMask(const AttentionInput<float>& a, const AttentionInput<float>& b);

// Validates every head (InvalidArgument), then runs the launches. A result per head, in order.
std::vector<PlanResult<float>> runInDeviceBatches(const AttentionBatch<float>& heads, MaskMode mode,
                                                  const DeviceLaunch& launch);

// The kernels' batched layout, [batch][rows][cols] row-major (as Eigen's Mat): the matrix `get(item)` of
// every item, one after another.
template <class Items, class Get>
std::vector<float> stacked(const Items& items, const Get& get) {
  std::vector<float> all;
  for (const auto& item : items) {
    const MatF& m = get(item);
    all.insert(all.end(), m.data(), m.data() + m.size());
  }
  return all;
}

// Item `index` of a batched array: a rows × cols matrix, or an n-vector.
MatF batchItem(const std::vector<float>& all, size_t index, Eigen::Index rows, Eigen::Index cols);
Vec<float> batchVector(const std::vector<float>& all, size_t index, Eigen::Index n);
std::vector<float> batchSlice(const std::vector<float>& all, size_t index, size_t n);
// A vector as the kernels take it.
std::vector<float> toVector(const Vec<float>& v);

// Item `index`'s duals, dual histories and error history (when the run recorded one; its last entry is then
// the errors of the returned plan) from a batched run of nq × nk heads.
void setHeadDuals(const cuda::CudaAttentionResult& all, size_t index, Eigen::Index nq, Eigen::Index nk,
                  PlanResult<float>& r);

}  // namespace tl
