#include "ops/softmax/softmax.h"

#include "ops/registry.h"
#include "ops/sinkhorn/sinkhorn.h"

namespace tl {

SoftmaxParams SoftmaxParams::from(const ParamSet& params) {
  SoftmaxParams p;
  p.maskMode = parseMaskMode(getString(params, "mask_mode"));
  return p;
}

// Row softmax is exactly the first Sinkhorn normalisation (docs/operators/softmax.md#definition), so it
// shares that one implementation: u_i = log(1/n_q) − LSE_j(S_ij + v_j), v = 0 (−inf on padded keys), eps = 1.
template <class T>
PlanResult<T> softmaxAttention(const AttentionInput<T>& input, const SoftmaxParams& params, Feedback& feedback) {
  SinkhornParams asSinkhorn;
  asSinkhorn.T = 1;
  asSinkhorn.eps = 1.0;
  asSinkhorn.maskMode = params.maskMode;
  return sinkhornAttention(input, asSinkhorn, feedback);
}

template PlanResult<float> softmaxAttention(const AttentionInput<float>&, const SoftmaxParams&, Feedback&);
template PlanResult<double> softmaxAttention(const AttentionInput<double>&, const SoftmaxParams&, Feedback&);

namespace {
class SoftmaxOperator : public TypedOperator<SoftmaxOperator> {
 public:
  explicit SoftmaxOperator(const ParamSet& params)
      : TypedOperator("softmax", params), params_(SoftmaxParams::from(params)) {}
  template <class T>
  PlanResult<T> compute(const AttentionInput<T>& input, Feedback& feedback) const {
    return softmaxAttention(input, params_, feedback);
  }

 private:
  SoftmaxParams params_;
};
}  // namespace

void registerSoftmax(OperatorRegistry& registry) {
  registry.add({"softmax", "Softmax", "row softmax of QKᵀ/√d (the T=1 Sinkhorn step): rows sum to 1, columns do not",
                ParamSchema({maskModeSpec(true)}),
                [](const ParamSet& p) { return std::make_unique<SoftmaxOperator>(p); }});
}

}  // namespace tl
