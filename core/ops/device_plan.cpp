#include "ops/device_plan.h"

#include <memory>
#include <utility>

#include "ops/device_batches.h"

namespace tl {

cuda::AttentionProblem DeviceHead::problem(const MatF* V) const {
  cuda::AttentionProblem p;
  p.nq = int(Q.rows());
  p.nk = int(K.rows());
  p.d = int(Q.cols());
  p.q = Q.data();
  p.k = K.data();
  if (V) {
    p.v = V->data();
    p.dv = int(V->cols());
  }
  p.logMu = logMu;
  p.logNu = logNu;
  p.scale = scale;
  return p;
}

Mat<float> matrixOf(const std::vector<float>& values, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const Mat<float>>(values.data(), rows, cols);
}

Plan<float> keptOnDevice(DeviceHead head, const std::vector<float>& u, const std::vector<float>& v, size_t item,
                         double eps, const DenseKernels& kernels) {
  std::vector<float> headU = batchSlice(u, item, size_t(head.Q.rows()));
  std::vector<float> headV = batchSlice(v, item, size_t(head.K.rows()));
  return Plan<float>(std::make_shared<const DevicePlan>(std::move(head), std::move(headU), std::move(headV), eps, kernels));
}

DevicePlan::DevicePlan(DeviceHead head, std::vector<float> u, std::vector<float> v, double eps,
                       const DenseKernels& kernels)
    : head_(std::move(head)), u_(std::move(u)), v_(std::move(v)), eps_(eps), kernels_(kernels) {}

Mat<float> DevicePlan::apply(const Mat<float>& V) const {
  const auto r = kernels_.planFromDuals(head_.problem(&V), u_, v_, eps_, {});
  return matrixOf(r.output, rows(), V.cols());
}

Mat<float> DevicePlan::applyTransposed(const Mat<float>& W) const {
  const DeviceHead t = head_.transposed();
  const auto r = kernels_.planFromDuals(t.problem(&W), v_, u_, eps_, {});
  return matrixOf(r.output, cols(), W.cols());
}

Mat<float> DevicePlan::materialize() const {
  cuda::CudaOptions o;
  o.plan = true;
  return matrixOf(kernels_.planFromDuals(head_.problem(nullptr), u_, v_, eps_, o).plan, rows(), cols());
}

Mat<float> DevicePlan::rowBlock(Eigen::Index first, Eigen::Index count) const {
  if (count == 0) return Mat<float>(0, cols());
  const auto from = head_.logMu.begin() + first;
  const DeviceHead rows{head_.Q.middleRows(first, count), head_.K, std::vector<float>(from, from + count), head_.logNu,
                        head_.scale};
  const std::vector<float> u(u_.begin() + first, u_.begin() + first + count);
  cuda::CudaOptions o;
  o.plan = true;
  return matrixOf(kernels_.planFromDuals(rows.problem(nullptr), u, v_, eps_, o).plan, count, cols());
}

PooledPlan<float> DevicePlan::pooled(int maxRows, int maxCols) const {
  cuda::CudaOptions o;
  o.tileRows = maxRows;
  o.tileCols = maxCols;
  const cuda::DisplayTiles t = kernels_.planFromDuals(head_.problem(nullptr), u_, v_, eps_, o).tiles;
  return {t.rowStarts, t.colStarts, matrixOf(t.mean, t.rows, t.cols), matrixOf(t.max, t.rows, t.cols)};
}

}  // namespace tl
