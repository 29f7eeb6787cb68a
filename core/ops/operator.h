#pragma once
// An operator is a family (softmax, sinkhorn, ...) with resolved parameters. It runs on the CPU reference
// path in float or double; the registry (registry.h) creates operators from "family:key=value" specs, each
// through ops/family.h.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/params.h"
#include "ops/device_path.h"
#include "ops/plan_result.h"

namespace tl {

class Operator {
 public:
  virtual ~Operator() = default;
  virtual const std::string& family() const = 0;
  virtual const ParamSet& params() const = 0;
  virtual PlanResult<double> run(const AttentionInput<double>& input, Feedback& feedback) const = 0;
  virtual PlanResult<float> run(const AttentionInput<float>& input, Feedback& feedback) const = 0;

  // True when run() keeps the plan structured (ops/transport_plan.h: LOT's factors, hard ESP's slice
  // matchings, the band): the result's output and marginals then come without any n×n matrix, which is
  // formed only when something asks for plan.dense().
  virtual bool structuredPlan() const = 0;
  // O = A·V alone, for structured operators: without the plan object, the diagnostics and the family extras that
  // run() adds for the views (what a model's forward needs, and what `tlens bench --lazy` times). Equal to
  // run(input).output; InvalidArgument without V or when the plan is not structured.
  virtual Mat<double> lazyOutput(const AttentionInput<double>& input, Feedback& feedback) const = 0;
  virtual Mat<float> lazyOutput(const AttentionInput<float>& input, Feedback& feedback) const = 0;

  // The CUDA backend (float32): std::nullopt when this operator runs on the GPU, else why not ("esp has no
  // CUDA kernels yet", "this TransportLens was built without CUDA"). runCuda takes the heads of one layer
  // (equal shapes and masks run in one launch, batch = B·H) and returns a result per head; it throws
  // ResourceError with the reason when called anyway, cuda::CudaError (a ResourceError) for device failures,
  // Canceled on cancel.
  virtual std::optional<std::string> cudaUnsupported() const = 0;
  virtual std::vector<PlanResult<float>> runCuda(const AttentionBatch<float>& heads, const DeviceRequest& request,
                                                 Feedback& feedback) const = 0;

  // The family's device path on given kernels, in every build (the CPU tests pass the simulated device,
  // tests/core/cuda/sim_device.h). False / ResourceError when the family or these parameters have none.
  virtual bool hasDevicePath() const = 0;
  virtual std::vector<PlanResult<float>> runOnDevice(const AttentionBatch<float>& heads, const DeviceRequest& request,
                                                     const DenseKernels& kernels, Feedback& feedback) const = 0;
};

}  // namespace tl
