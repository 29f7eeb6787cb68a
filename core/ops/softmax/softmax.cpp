#include "ops/softmax/softmax.h"

#include "ops/family.h"
#include "ops/dense_device.h"
#include "ops/sinkhorn/sinkhorn.h"

namespace tl {

const ParamBindings<SoftmaxParams>& softmaxParamBindings() {
  static const ParamBindings<SoftmaxParams> bindings = [] {
    ParamBindings<SoftmaxParams> b;
    bindMaskMode(b, true);
    return b;
  }();
  return bindings;
}

SoftmaxParams::SoftmaxParams() { softmaxParamBindings().fillDefaults(*this); }
SoftmaxParams SoftmaxParams::from(const ParamSet& resolved) { return softmaxParamBindings().fill(resolved); }

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

void registerSoftmax(OperatorRegistry& registry) {
  CudaPath<SoftmaxParams> cuda;
  cuda.run = [](const AttentionBatch<float>& heads, const SoftmaxParams& p, const DeviceRequest& request,
                const DenseKernels& kernels, Feedback& feedback) {
    return runDenseOnDevice(heads, {1, 1.0, true, p.maskMode}, request, kernels, feedback);
  };
  registry.add(familyInfo<SoftmaxParams>(
      {{"softmax", "Softmax", "row softmax of QKᵀ/√d (the T=1 Sinkhorn step): rows sum to 1, columns do not"},
       softmaxParamBindings(),
       {Backend::Torch},
       {},
       cuda},
      [](const auto& input, const SoftmaxParams& p, Feedback& f) { return softmaxAttention(input, p, f); }));
}

}  // namespace tl
