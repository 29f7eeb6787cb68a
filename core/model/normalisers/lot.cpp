// lot: learned pivots per head, parameters `pivots` [H, r, d] and `mass_logits` [H, r]; two log-domain
// problems with budget T and the glued coupling applied in O(n r d) (docs/operators/lot.md#definition).
#include <algorithm>
#include <cmath>

#include "model/normalisers/families.h"
#include "model/normalisers/log_domain.h"
#include "model/normalisers/normaliser.h"
#include "ops/lot/lot.h"

namespace tl {
namespace {

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
      Z = torch::randn({heads, p_.r, headDim}) / std::sqrt(double(headDim));  // N(0, 1/d), docs/operators/lot.md#training
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
    // (1) queries → pivots on S1 = Q Zᵀ/√d, (2) pivots → keys on S2 = Z Kᵀ/√d (docs/operators/lot.md#definition).
    const torch::Tensor X1 = scaledScores(q, Z, p_.eps), X2 = scaledScores(Z, k, p_.eps);
    const torch::Tensor P1 = planOf(X1, alternateNormalisations(X1, logUniform(nq, q), logw, p_.T));
    const torch::Tensor P2 = planOf(X2, alternateNormalisations(X2, logw, logUniform(nk, k), p_.T));
    const torch::Tensor invw = torch::exp(-logw).unsqueeze(-1);  // [1, H, r, 1]
    // O = n_q·P1 (diag(1/w) (P2 V)) in O(n r d), never n×n (§4.4).
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

TorchNormaliser makeLotNormaliser(OperatorSpec spec, int heads, int headDim) {
  return std::make_shared<LotNormaliser>(std::move(spec), heads, headDim);
}

}  // namespace tl
