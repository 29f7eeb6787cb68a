#include "model/normalisers/normaliser_step_timing.h"

#include <chrono>

#include "common/errors.h"
#include "model/normalisers/torch_normalisers.h"

namespace tl {

NormaliserStepTimes timeNormaliserStep(const OperatorSpec& spec, const NormaliserStepShape& shape, int repeats) {
  const TorchNormaliser normaliser = makeTorchNormaliser(spec, shape.heads, shape.headDim);
  normaliser->train();
  torch::manual_seed(0);
  const std::vector<int64_t> sizes{shape.batch, shape.heads, shape.tokens, shape.headDim};
  const torch::Tensor q = torch::randn(sizes), k = torch::randn(sizes), v = torch::randn(sizes);
  const torch::Tensor outputWeights = torch::randn(sizes);
  auto step = [&](bool withAttention) {
    const torch::Tensor qg = q.clone().requires_grad_(), kg = k.clone().requires_grad_(), vg = v.clone().requires_grad_();
    const auto start = std::chrono::steady_clock::now();
    (normaliser->forward(qg, kg, vg, withAttention).output * outputWeights).sum().backward();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Interleaved, so that a change in the machine's load reaches both paths alike.
  step(false);
  step(true);
  NormaliserStepTimes times;
  for (int r = 0; r < repeats; ++r) {
    times.trainingPath.push_back(step(false));
    times.denseGraph.push_back(step(true));
  }
  return times;
}

void requireTrainable(const OperatorSpec& spec) {
  if (!hasTorchNormaliser(spec.family))
    throw InvalidArgument(spec.family + " has no LibTorch (trainable) version to time; choose softmax, sinkhorn, esp or lot");
}

}  // namespace tl
