#include "model/normalisers/torch_normalisers.h"

#include <cmath>
#include <limits>

#include "common/errors.h"
#include "model/normalisers/esp_soft_output.h"
#include "ops/esp/esp.h"
#include "ops/lot/lot.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/softmax/softmax.h"

namespace tl {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Potentials (ut, vt) in eps units of the plan exp(X + ut ⊕ vt) after `budget` single normalisations, rows
// first (docs/operators/sinkhorn.md#definition; the same loop as ops/sinkhorn/sinkhorn_loop.h). X [..., n_r,
// n_c] = S/eps; logRow and logCol broadcast to [..., n_r] and [..., n_c]. A −inf log marginal marks
// an inactive token: its potential becomes −inf − (finite LSE) = −inf, so it carries no mass and no NaN
// reaches the gradients.
struct Potentials {
  torch::Tensor ut, vt;
};

Potentials alternateNormalisations(const torch::Tensor& X, const torch::Tensor& logRow, const torch::Tensor& logCol,
                                   int budget) {
  Potentials p;
  p.vt = torch::where(torch::isinf(logCol), logCol, torch::zeros_like(logCol));
  for (int t = 1; t <= budget; ++t) {
    if (t % 2 == 1)
      p.ut = logRow - torch::logsumexp(X + p.vt.unsqueeze(-2), -1);
    else
      p.vt = logCol - torch::logsumexp(X + p.ut.unsqueeze(-1), -2);
  }
  return p;  // budget >= 1 (the schema's range), so ut is set
}

torch::Tensor planOf(const torch::Tensor& X, const Potentials& p) {
  return torch::exp(X + p.ut.unsqueeze(-1) + p.vt.unsqueeze(-2));
}

// X = S/eps = (QKᵀ/√d)/eps, divided in this order as the core does (ops/score_geometry.cpp), so float32
// results round alike.
torch::Tensor scaledScores(const torch::Tensor& q, const torch::Tensor& k, double eps) {
  return torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1))) / eps;
}

torch::Tensor logUniform(int64_t n, const torch::Tensor& like) {
  return torch::full({n}, -std::log(double(n)), like.options());
}

void checkShapes(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const std::string& family) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.size(0) != k.size(0) || q.size(1) != k.size(1) ||
      q.size(-1) != k.size(-1) || v.size(0) != k.size(0) || v.size(1) != k.size(1) || v.size(2) != k.size(2))
    throw InvalidArgument(family + ": expected q [B,H,n_q,d], k [B,H,n_k,d], v [B,H,n_k,d_v]; got q " +
                          c10::str(q.sizes()) + ", k " + c10::str(k.sizes()) + ", v " + c10::str(v.sizes()));
}

// True when the mask pads at least one token; throws InvalidArgument for a malformed mask.
bool checkKeyMask(const torch::Tensor& mask, const torch::Tensor& q, const torch::Tensor& k, const std::string& family) {
  if (!mask.defined()) return false;
  if (mask.scalar_type() != torch::kBool || mask.dim() != 2 || mask.size(0) != q.size(0) ||
      mask.size(1) != q.size(2) || q.size(2) != k.size(2))
    throw InvalidArgument(family + ": the key mask must be a [B, n] bool tensor for self-attention over n tokens; got " +
                          c10::str(mask.sizes()));
  if (!mask.any(1).all().item<bool>())
    throw InvalidArgument(family + ": every sequence needs at least one valid (unmasked) token");
  return !mask.all().item<bool>();
}

TorchAttention mix(const torch::Tensor& A, const torch::Tensor& v, bool withAttention) {
  TorchAttention out;
  out.output = torch::matmul(A, v);
  if (withAttention) out.attention = A;
  return out;
}

// softmax (T = 1, eps = 1) and sinkhorn.
class SinkhornNormaliser : public TorchNormaliserImpl {
 public:
  SinkhornNormaliser(OperatorSpec spec, SinkhornParams params) : TorchNormaliserImpl(std::move(spec)), p_(params) {}

  TorchAttention forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool withAttention,
                         const torch::Tensor& keyMask) override {
    checkShapes(q, k, v, spec().family);
    const torch::Tensor X = scaledScores(q, k, p_.eps);
    const int64_t nq = q.size(2), nk = k.size(2);
    if (!checkKeyMask(keyMask, q, k, spec().family))
      return mix(double(nq) * planOf(X, alternateNormalisations(X, logUniform(nq, X), logUniform(nk, X), p_.T)), v,
                 withAttention);
    const torch::Tensor negInf = torch::full({1}, kNegInf, X.options());
    if (p_.maskMode == MaskMode::KeepQueries) {
      // docs/conventions.md#masks: every query row kept with mu = 1/n_q; padded keys get nu_j = 0.
      const torch::Tensor logCol = torch::where(keyMask, logUniform(nk, X), negInf).unsqueeze(1);
      return mix(double(nq) * planOf(X, alternateNormalisations(X, logUniform(nq, X), logCol, p_.T)), v,
                 withAttention);
    }
    // subsequence: the valid block alone, marginals 1/n_valid, attention scale n_valid.
    const torch::Tensor nValid = keyMask.sum(1, /*keepdim=*/true).to(X.scalar_type());  // [B, 1]
    const torch::Tensor logM = torch::where(keyMask, -torch::log(nValid), negInf).unsqueeze(1);  // [B, 1, n]
    const torch::Tensor scale = nValid.view({-1, 1, 1, 1});
    return mix(scale * planOf(X, alternateNormalisations(X, logM, logM, p_.T)), v, withAttention);
  }

 private:
  SinkhornParams p_;
};

// Head bh (batch and head flattened) of a contiguous [B, H, n, c] tensor of scalar type T, as an n×c matrix.
template <class T>
Eigen::Map<const Mat<T>> headMatrix(const torch::Tensor& t, int64_t bh) {
  const int64_t n = t.size(2), c = t.size(3);
  return Eigen::Map<const Mat<T>>(t.data_ptr<T>() + bh * n * c, n, c);
}

// Slice plans in attention scale, n_q·U_l, of the hard slices, from the core's HardSlice
// (docs/operators/esp.md#definition, #ties, #unequal-sizes): piecewise constant in Q and K, so a constant
// of the autograd graph. q, k: contiguous [B, H, n, d] of scalar type T.
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
      Mat<T> slicePlan = Mat<T>::Zero(nq, nk);
      addSlicePlan(hardSlice<T>(projQ.col(l), projK.col(l), coupling, p.ties), T(nq), slicePlan);
      std::copy(slicePlan.data(), slicePlan.data() + nq * nk, out + (bh * theta.rows() + l) * nq * nk);
    }
  }
  return U;
}

// SoftSort rows (docs/operators/esp.md#soft-sorting, squared distance, ascending anchors): values [..., n]
// → [..., n, n], row r = rank r, column j = token j. Gradients flow through both the anchors and the entries.
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
    // D_l = <C, U_l>, w = softmax(−tau·D), A = n_q·Σ_l w_l U_l (docs/operators/esp.md#definition).
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
    for (int64_t bh = 0; bh < heads; ++bh) {
      AttentionInput<T> head;
      head.Q = headMatrix<T>(qc, bh);
      head.K = headMatrix<T>(kc, bh);
      head.V = headMatrix<T>(vc, bh);
      Eigen::Map<Mat<T>>(out.data_ptr<T>() + bh * nq * dv, nq, dv) = espLazyOutput<T>(head, p_);
    }
    return out;
  }

  torch::Tensor hardPlans(const torch::Tensor& q, const torch::Tensor& k) const {
    torch::NoGradGuard noGrad;
    const torch::Tensor qd = q.detach(), kd = k.detach();
    if (q.scalar_type() == torch::kFloat64) return hardSlicePlans<double>(qd, kd, directions_, p_);
    if (q.scalar_type() == torch::kFloat32) return hardSlicePlans<float>(qd, kd, directions_, p_);
    throw InvalidArgument("esp: hard sorting needs float32 or float64 queries and keys");
  }

  // n_q·U_l = n_q·R^Qᵀ Λ R^K with SoftSort matrices (docs/operators/esp.md#soft-sorting),
  // [B, H, L, n_q, n_k].
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

class LotNormaliser : public TorchNormaliserImpl {
 public:
  LotNormaliser(OperatorSpec spec, int heads, int headDim)
      : TorchNormaliserImpl(std::move(spec)), p_(LotParams::from(this->spec().params)) {
    torch::Tensor Z, theta = torch::zeros({heads, p_.r});
    if (p_.pivots.size() != 0) {
      if (p_.pivots.cols() != headDim)
        throw InvalidArgument("lot: the pivots file has d = " + std::to_string(p_.pivots.cols()) +
                              " columns, but the heads have d = " + std::to_string(headDim));
      Z = fromEigen(p_.pivots).unsqueeze(0).repeat({heads, 1, 1});
    } else {
      Z = torch::randn({heads, p_.r, headDim}) / std::sqrt(double(headDim));  // N(0, 1/d): docs/operators/lot.md
    }
    if (p_.massLogits.size() != 0) theta = fromEigen(p_.massLogits).view({1, -1}).repeat({heads, 1});
    pivots_ = register_parameter("pivots", Z);
    massLogits_ = register_parameter("mass_logits", theta);
  }

  TorchAttention forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool withAttention,
                         const torch::Tensor& keyMask) override {
    checkShapes(q, k, v, "lot");
    if (checkKeyMask(keyMask, q, k, "lot"))
      throw InvalidArgument("lot: the LibTorch LOT has no padding masks; run padded inputs through the core operator");
    const int64_t nq = q.size(2), nk = k.size(2);
    if (p_.r > std::min(nq, nk))
      throw InvalidArgument("lot: r = " + std::to_string(p_.r) + " pivots exceed n = " +
                            std::to_string(std::min(nq, nk)) + " tokens; choose r <= " + std::to_string(std::min(nq, nk)));
    if (q.size(1) != pivots_.size(0) || q.size(3) != pivots_.size(2))
      throw InvalidArgument("lot: the pivots are sized for " + std::to_string(pivots_.size(0)) + " heads of d = " +
                            std::to_string(pivots_.size(2)) + ", not " + c10::str(q.sizes()));
    const torch::Tensor Z = pivots_.to(q.scalar_type()).unsqueeze(0);  // [1, H, r, d]
    const torch::Tensor logw = torch::log_softmax(massLogits_.to(q.scalar_type()) / p_.massTemp, -1).unsqueeze(0);
    // (1) queries → pivots on S1 = Q Zᵀ/√d, (2) pivots → keys on S2 = Z Kᵀ/√d
    // (docs/operators/lot.md#definition).
    const torch::Tensor X1 = scaledScores(q, Z, p_.eps), X2 = scaledScores(Z, k, p_.eps);
    const torch::Tensor P1 = planOf(X1, alternateNormalisations(X1, logUniform(nq, q), logw, p_.T));
    const torch::Tensor P2 = planOf(X2, alternateNormalisations(X2, logw, logUniform(nk, k), p_.T));
    const torch::Tensor invw = torch::exp(-logw).unsqueeze(-1);  // [1, H, r, 1]
    // O = n_q·P1 (diag(1/w) (P2 V)) in O(n r d), never n×n (docs/operators/lot.md#lazy-path).
    TorchAttention out;
    out.output = double(nq) * torch::matmul(P1, invw * torch::matmul(P2, v));
    if (withAttention) out.attention = double(nq) * torch::matmul(P1, invw * P2);
    return out;
  }

 private:
  template <class Derived>
  static torch::Tensor fromEigen(const Eigen::MatrixBase<Derived>& m) {
    const MatD dense = m.template cast<double>();
    return torch::from_blob(const_cast<double*>(dense.data()), {dense.rows(), dense.cols()}, torch::kFloat64)
        .to(torch::kFloat32);
  }

  LotParams p_;
  torch::Tensor pivots_, massLogits_;
};

}  // namespace

bool hasTorchNormaliser(const std::string& family) {
  return family == "softmax" || family == "sinkhorn" || family == "esp" || family == "lot";
}

TorchNormaliser makeTorchNormaliser(const OperatorSpec& spec, int heads, int headDim) {
  // Resolving again checks names, ranges and defaults with the registry's own schema.
  OperatorSpec resolved = OperatorRegistry::builtin().resolve(spec.family, spec.params);
  if (resolved.family == "softmax") {
    SinkhornParams asSinkhorn;  // row softmax is the T = 1 Sinkhorn step, as in ops/softmax.cpp
    asSinkhorn.T = 1;
    asSinkhorn.eps = 1.0;
    asSinkhorn.maskMode = SoftmaxParams::from(resolved.params).maskMode;
    return std::make_shared<SinkhornNormaliser>(std::move(resolved), asSinkhorn);
  }
  if (resolved.family == "sinkhorn") {
    const SinkhornParams p = SinkhornParams::from(resolved.params);
    return std::make_shared<SinkhornNormaliser>(std::move(resolved), p);
  }
  if (resolved.family == "esp") return std::make_shared<EspNormaliser>(std::move(resolved), headDim);
  if (resolved.family == "lot") return std::make_shared<LotNormaliser>(std::move(resolved), heads, headDim);
  throw InvalidArgument(resolved.family +
                        " has no LibTorch (trainable) version; a model can use softmax, sinkhorn, esp or lot, and "
                        "every family can be swapped into a trained model through the core path");
}

}  // namespace tl
