#include "ops/device_batches.h"

#include "ops/subsequence.h"

namespace tl {
namespace {

bool sameShapeAndMask(const AttentionInput<float>& a, const AttentionInput<float>& b) {
  const bool shapes = a.Q.rows() == b.Q.rows() && a.K.rows() == b.K.rows() && a.Q.cols() == b.Q.cols() &&
                      bool(a.V) == bool(b.V) && (!a.V || a.V->cols() == b.V->cols());
  return shapes && sameMask(a, b);
}

}  // namespace

bool sameMask(const AttentionInput<float>& a, const AttentionInput<float>& b) {
  return bool(a.mask) == bool(b.mask) && (!a.mask || (a.mask->size() == b.mask->size() && (*a.mask == *b.mask).all()));
}

std::vector<PlanResult<float>> runInDeviceBatches(const AttentionBatch<float>& heads, MaskMode mode,
                                                  const DeviceLaunch& launch) {
  for (const auto& h : heads) validateInput(h);
  if (heads.empty()) return {};
  for (const auto& h : heads)
    if (!sameShapeAndMask(h, heads.front())) {  // not one layer's heads: one launch each
      std::vector<PlanResult<float>> out;
      for (const auto& one : heads) out.push_back(std::move(runInDeviceBatches({one}, mode, launch).front()));
      return out;
    }
  const std::optional<Mask>& mask = heads.front().mask;
  if (!mask || mask->all()) return launch(heads, std::nullopt);
  if (mode == MaskMode::KeepQueries) return launch(heads, mask);
  // subsequence: the valid tokens of every head (one mask) in one launch, each result scattered back.
  const std::vector<Eigen::Index> valid = validIndices(*mask);
  AttentionBatch<float> compacted;
  for (const auto& h : heads) {
    AttentionInput<float> c;
    c.Q = takeRows(h.Q, valid);
    c.K = takeRows(h.K, valid);
    if (h.V) c.V = takeRows(*h.V, valid);
    compacted.push_back(std::move(c));
  }
  std::vector<PlanResult<float>> onValid = launch(compacted, std::nullopt);
  std::vector<PlanResult<float>> out;
  for (size_t h = 0; h < heads.size(); ++h)
    out.push_back(runOnValidSubsequence<float>(heads[h], [&](const AttentionInput<float>&) { return onValid[h]; }));
  return out;
}

MatF batchItem(const std::vector<float>& all, size_t index, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const MatF>(all.data() + index * size_t(rows * cols), rows, cols);
}

Vec<float> batchVector(const std::vector<float>& all, size_t index, Eigen::Index n) {
  return Eigen::Map<const Vec<float>>(all.data() + index * size_t(n), n);
}

std::vector<float> toVector(const Vec<float>& v) { return {v.data(), v.data() + v.size()}; }

std::vector<float> batchSlice(const std::vector<float>& all, size_t index, size_t n) {
  return {all.begin() + long(index * n), all.begin() + long((index + 1) * n)};
}

void setHeadDuals(const cuda::CudaAttentionResult& all, size_t index, Eigen::Index nq, Eigen::Index nk,
                  PlanResult<float>& r) {
  r.u = batchVector(all.u, index, nq);
  r.v = batchVector(all.v, index, nk);
  r.uHistory = batchItem(all.uHistory, index, all.steps, nq);
  r.vHistory = batchItem(all.vHistory, index, all.steps, nk);
  for (int t = 0; t < all.steps && !all.errorHistory.empty(); ++t) {
    const cuda::StepErrors& e = all.errorHistory[index * size_t(all.steps) + size_t(t)];
    r.errorHistory.push_back({e.rowMax, e.rowMean, e.colMax, e.colMean});
  }
  if (!r.errorHistory.empty()) r.errors = r.errorHistory.back();
}

}  // namespace tl
