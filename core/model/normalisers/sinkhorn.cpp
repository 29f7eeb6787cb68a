// sinkhorn: unrolled log-domain loop, T single normalisations rows first (docs/operators/sinkhorn.md#definition); key masks in
// both mask_modes, with −inf potentials instead of multiplied masks (docs/conventions.md#log-domain).
#include <limits>

#include "model/normalisers/families.h"
#include "model/normalisers/log_domain.h"
#include "model/normalisers/normaliser.h"

namespace tl {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

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
      // keep-queries (docs/conventions.md#masks): every query row kept with mu = 1/n_q; padded keys get nu_j = 0.
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

}  // namespace

TorchNormaliser makeSinkhornStepNormaliser(OperatorSpec spec, const SinkhornParams& params) {
  return std::make_shared<SinkhornNormaliser>(std::move(spec), params);
}

TorchNormaliser makeSinkhornNormaliser(OperatorSpec spec, int /*heads*/, int /*headDim*/) {
  const SinkhornParams p = SinkhornParams::from(spec.params);
  return makeSinkhornStepNormaliser(std::move(spec), p);
}

}  // namespace tl
