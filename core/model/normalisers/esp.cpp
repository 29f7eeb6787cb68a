// esp: SoftSort plans while the module is training (sort_temp), the spec's `sort` in eval mode (hard by
// default). Hard plans come from the core's slices (ops/esp/esp_slice.h), so ties, slicers and rank couplings
// are the core's; gradients reach Q, K through the slice weights and V. Without the attention matrix
// (training), soft p = 2 self-attention runs through esp_soft_output.h, which never forms the
// [B, H, L, n, n] plans.
#include <cmath>
#include <string>
#include <utility>

#include "common/parallel.h"
#include "model/normalisers/esp_soft_output.h"
#include "model/normalisers/families.h"
#include "model/normalisers/normaliser.h"
#include "ops/esp/esp.h"

namespace tl {
namespace {

// Head bh (batch and head flattened) of a contiguous [B, H, n, c] tensor of scalar type T, as an n×c matrix.
template <class T>
Eigen::Map<const Mat<T>> headMatrix(const torch::Tensor& t, int64_t bh) {
  const int64_t n = t.size(2), c = t.size(3);
  return Eigen::Map<const Mat<T>>(t.data_ptr<T>() + bh * n * c, n, c);
}

// Slice plans in attention scale, n_q·U_l, of the hard slices, from the core's HardSlice (docs/operators/esp.md#definition,
// #ties): piecewise constant in Q and K, so a constant of the autograd graph. q, k: contiguous
// [B, H, n, d] of scalar type T.
template <class T>
torch::Tensor hardSlicePlans(const torch::Tensor& q, const torch::Tensor& k, const MatD& directions,
                             const EspParams& p) {
  const int64_t B = q.size(0), H = q.size(1), nq = q.size(2), nk = k.size(2);
  const Mat<T> theta = directions.cast<T>();
  const auto coupling = rankCoupling(int(nq), int(nk), p.rankCoupling);
  torch::Tensor U = torch::zeros({B, H, theta.rows(), nq, nk}, q.options());
  T* out = U.data_ptr<T>();
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const Eigen::Map<const Mat<T>> Q = headMatrix<T>(q, bh), K = headMatrix<T>(k, bh);
    // The same projections as the core operator computes (ops/esp.cpp), so sort orders agree bit for bit.
    const Mat<T> projQ = Q * theta.transpose(), projK = K * theta.transpose();
    for (Eigen::Index l = 0; l < theta.rows(); ++l) {
      Eigen::Map<Mat<T>> slicePlan(out + (bh * theta.rows() + l) * nq * nk, nq, nk);
      slicePlan.setZero();
      addSlicePlan<T>(hardSlice<T>(projQ.col(l), projK.col(l), coupling, p.ties), T(nq), slicePlan);
    }
  }
  return U;
}

// SoftSort rows (docs/operators/esp.md#soft-sorting, squared distance, ascending anchors): values [..., n] → [..., n, n],
// row r = rank r, column j = token j. Gradients flow through both the anchors and the entries.
torch::Tensor softSort(const torch::Tensor& values, double temp) {
  const torch::Tensor sorted = std::get<0>(values.sort(-1));
  return torch::softmax((values.unsqueeze(-2) - sorted.unsqueeze(-1)).square() / -temp, -1);
}

class EspNormaliser : public TorchNormaliserImpl {
 public:
  EspNormaliser(OperatorSpec spec, int headDim)
      : TorchNormaliserImpl(std::move(spec)), p_(EspParams::from(this->spec().params)),
        directions_(sliceDirections(p_.slices, headDim)) {}

  TorchAttention forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool withAttention,
                         const torch::Tensor& keyMask) override {
    checkShapes(q, k, v, "esp");
    if (checkKeyMask(keyMask, q, k, "esp"))
      throw InvalidArgument("esp: the LibTorch ESP has no padding masks; run padded inputs through the core operator");
    if (q.size(-1) != directions_.cols())
      throw InvalidArgument("esp: head dimension " + std::to_string(q.size(-1)) + " does not fit the " +
                            std::to_string(directions_.cols()) + "-dimensional slice directions");
    const bool soft = is_training() || p_.sort == SortMode::Soft;
    if (!soft && !withAttention && !torch::GradMode::is_enabled()) {
      // Inference (tlens eval): the core's hard fast path, O(L·n·(log n + d)) per head and nothing n×n.
      TorchAttention out;
      out.output = q.scalar_type() == torch::kFloat64 ? lazyHardOutput<double>(q, k, v) : lazyHardOutput<float>(q, k, v);
      return out;
    }
    // compat=reference-code: q, k pre-scaled by d^{-1/2} (docs/operators/esp.md#compat).
    const double scale = p_.compat == EspCompat::ReferenceCode ? 1.0 / std::sqrt(double(q.size(-1))) : 1.0;
    const torch::Tensor qs = (q * scale).contiguous(), ks = (k * scale).contiguous();
    const int64_t nq = q.size(2), nk = k.size(2);
    if (soft && !withAttention && nq == nk && p_.costExponent() == 2) {
      // Training's path: the fused SoftSort output, equal to the dense graph below without its [L, n, n] plans.
      TorchAttention out;
      out.output = espSoftOutput(sliceValues(qs), sliceValues(ks), qs, ks, v, p_.sortTemp, p_.tau);
      return out;
    }
    // n_q·U_l flattened to [B, H, L, n_q·n_k], so the sums over (i, j) below are batched matrix products
    // instead of [B, H, L, n_q, n_k] temporaries.
    const torch::Tensor plans =
        (soft ? softPlans(qs, ks) : hardPlans(qs, ks)).flatten(-2);
    // D_l = <C, U_l> (eq. 10), w = softmax(−tau·D) (eq. 9), A = n_q·Σ_l w_l U_l (§3.1).
    const torch::Tensor D = torch::matmul(plans, groundCost(qs, ks).flatten(-2).unsqueeze(-1)).squeeze(-1) / double(nq);
    const torch::Tensor w = torch::softmax(-p_.tau * D, -1);
    const torch::Tensor A = torch::matmul(w.unsqueeze(-2), plans).view({q.size(0), q.size(1), nq, nk});
    return mix(A, v, withAttention);
  }

 private:
  // C_ij = ‖q_i − k_j‖^p; the square root's infinite slope at q_i = k_j is kept off the graph by a floor.
  torch::Tensor groundCost(const torch::Tensor& q, const torch::Tensor& k) const {
    const torch::Tensor squared = (q.unsqueeze(-2) - k.unsqueeze(-3)).pow(2).sum(-1);
    const double p = p_.costExponent();
    return p == 2 ? squared : squared.clamp_min(1e-30).pow(p / 2);
  }

  torch::Tensor directions(const torch::Tensor& like) const {
    return torch::from_blob(const_cast<double*>(directions_.data()), {directions_.rows(), directions_.cols()},
                            torch::kFloat64)
        .to(like.scalar_type());
  }

  // Projections onto the slice directions, [B, H, n, d] → [B, H, L, n]: what SoftSort sorts.
  torch::Tensor sliceValues(const torch::Tensor& x) const {
    return torch::matmul(x, directions(x).t()).transpose(-2, -1);
  }

  // O = A·V of the hard plans head by head through ops/esp.h's espLazyOutput, on the unscaled q and k (it
  // applies compat itself). q, k, v of one floating type.
  template <class T>
  torch::Tensor lazyHardOutput(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) const {
    if (q.scalar_type() != torch::kFloat32 && q.scalar_type() != torch::kFloat64)
      throw InvalidArgument("esp: hard sorting needs float32 or float64 queries and keys");
    const torch::Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.to(q.scalar_type()).contiguous();
    const int64_t heads = q.size(0) * q.size(1), nq = q.size(2), dv = v.size(3);
    torch::Tensor out = torch::empty({q.size(0), q.size(1), nq, dv}, q.options());
    T* const outData = out.data_ptr<T>();
    // Heads (images × heads) across the cores: at model sizes one head is too small to split well.
    parallelForEach(heads, [&](Eigen::Index bh) {
      AttentionInput<T> head;
      head.Q = headMatrix<T>(qc, bh);
      head.K = headMatrix<T>(kc, bh);
      head.V = headMatrix<T>(vc, bh);
      Eigen::Map<Mat<T>>(outData + bh * nq * dv, nq, dv) = espLazyOutput<T>(head, p_);
    });
    return out;
  }

  torch::Tensor hardPlans(const torch::Tensor& q, const torch::Tensor& k) const {
    torch::NoGradGuard noGrad;
    const torch::Tensor qd = q.detach(), kd = k.detach();
    if (q.scalar_type() == torch::kFloat64) return hardSlicePlans<double>(qd, kd, directions_, p_);
    if (q.scalar_type() == torch::kFloat32) return hardSlicePlans<float>(qd, kd, directions_, p_);
    throw InvalidArgument("esp: hard sorting needs float32 or float64 queries and keys");
  }

  // n_q·U_l = n_q·R^Qᵀ Λ R^K with SoftSort matrices (§4.2), [B, H, L, n_q, n_k].
  torch::Tensor softPlans(const torch::Tensor& q, const torch::Tensor& k) const {
    const torch::Tensor rq = softSort(sliceValues(q), p_.sortTemp);
    const torch::Tensor rk = softSort(sliceValues(k), p_.sortTemp);
    // Both rank couplings are exactly I/n when n_q = n_k (rank r meets rank r): skip the n×n product.
    if (q.size(2) == k.size(2)) return torch::matmul(rq.transpose(-2, -1), rk);
    const int64_t nq = q.size(2);
    torch::Tensor lambda = torch::zeros({nq, k.size(2)}, q.options());
    for (const auto& e : rankCoupling(int(nq), int(k.size(2)), p_.rankCoupling)) lambda[e.r][e.s] = double(nq) * e.mass;
    return torch::matmul(rq.transpose(-2, -1), torch::matmul(lambda, rk));
  }

  EspParams p_;
  MatD directions_;  // Θ, L×d
};

}  // namespace

TorchNormaliser makeEspNormaliser(OperatorSpec spec, int /*heads*/, int headDim) {
  return std::make_shared<EspNormaliser>(std::move(spec), headDim);
}

}  // namespace tl
