#pragma once
// A softmax or Sinkhorn plan computed on the device, kept as its duals beside Q and K (ops/transport_plan.h):
// A = scale·exp((QKᵀ/√d + u ⊕ v)/eps), never stored. Every product, the dense matrix and the display tiles are
// computed by the dense kernels (ops/device_kernels.h) from Q, K and the duals when a view asks.
#include <vector>

#include "common/matrix.h"
#include "cuda/attention_problem.h"
#include "ops/device_kernels.h"
#include "ops/transport_plan.h"

namespace tl {

// One head's arrays in the layout the kernels take (row-major float32, batch 1). Eigen's Mat is row-major, so
// the matrices are passed as they are.
struct DeviceHead {
  MatF Q, K;
  std::vector<float> logMu, logNu;
  float scale = 1.f;

  // The head as a problem of the kernels, with values V (or none).
  cuda::AttentionProblem problem(const MatF* V) const;
  // The same head with queries and keys exchanged: the plan of that problem under exchanged duals is Aᵀ.
  DeviceHead transposed() const { return {K, Q, logNu, logMu, scale}; }
};

class DevicePlan final : public TransportPlan<float> {
 public:
  // u, v in score coordinates; `kernels` must outlive the plan (the GPU's are static).
  DevicePlan(DeviceHead head, std::vector<float> u, std::vector<float> v, double eps, const DenseKernels& kernels);
  Eigen::Index rows() const override { return head_.Q.rows(); }
  Eigen::Index cols() const override { return head_.K.rows(); }
  Mat<float> apply(const Mat<float>& V) const override;
  Mat<float> applyTransposed(const Mat<float>& W) const override;
  Mat<float> materialize() const override;
  // Rows from the plan kernel run on those queries alone: O(count·n_k·d) per block, where the default (Aᵀ applied
  // to unit vectors) costs O(n_q·n_k·count), cubic over all rows (the 3-D view's lines read every row).
  Mat<float> rowBlock(Eigen::Index first, Eigen::Index count) const override;
  PooledPlan<float> pooled(int maxRows, int maxCols) const override;
  const char* kind() const override { return "duals on the GPU"; }

 private:
  DeviceHead head_;
  std::vector<float> u_, v_;
  double eps_;
  const DenseKernels& kernels_;
};

// Head `item` of a launch kept as its duals: u [batch][n_q] and v [batch][n_k] (score coordinates) are the
// launch's, sliced for that head.
Plan<float> keptOnDevice(DeviceHead head, const std::vector<float>& u, const std::vector<float>& v, size_t item,
                         double eps, const DenseKernels& kernels);

// Row-major values as a rows × cols matrix.
Mat<float> matrixOf(const std::vector<float>& values, Eigen::Index rows, Eigen::Index cols);

}  // namespace tl
