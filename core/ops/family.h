#pragma once
// How an operator family joins the registry, written once for every family. A family supplies
//  - its text (name, title, one-line description),
//  - its typed parameters P bound to the schema (common/param_bindings.h), and P::from, which fills them from
//    resolved parameters (through the bindings, then reading files and checking combinations the schema
//    cannot express),
//  - its CPU reference as one generic callable (input, params, feedback) → PlanResult<T>, instantiated for
//    T = double and float,
//  - for which parameters that reference keeps the plan structured (ops/transport_plan.h), and for those its
//    output alone as a second generic callable (input, params, feedback) → Mat<T> (Operator::lazyOutput),
//  - its CUDA path (ops/device_path.h), which builds everywhere and is listed as a backend when this build
//    has CUDA, and any other backend beside the CPU that implements it (ops/backend.h).
// `familyInfo` turns that into the registry's FamilyInfo; the operator it creates is a FamilyOperator.
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/param_bindings.h"
#include "ops/operator.h"
#include "ops/registry.h"

namespace tl {

struct FamilyText {
  std::string name;         // "sinkhorn"
  std::string title;        // "Sinkhorn"
  std::string description;  // one line for help and tooltips
};

template <class P>
struct FamilyDefinition {
  FamilyText text;
  const ParamBindings<P>& bindings;
  std::vector<Backend> otherBackends = {};  // beside Backend::Cpu
  // Parameters for which run() returns a structured plan; empty: always dense.
  std::function<bool(const P&)> structured = {};
  CudaPath<P> cuda = {};  // empty: the family has no CUDA kernels
};

// The lazy output of a family whose plan is never structured.
struct NoLazyOutput {};

// Run and Lazy are generic callables (lambdas with a `const auto&` input) instantiated for float and double.
template <class P, class Run, class Lazy>
class FamilyOperator final : public Operator {
 public:
  FamilyOperator(std::string family, ParamSet params, P typed, Run run, Lazy lazy, bool structured, CudaPath<P> cuda)
      : family_(std::move(family)), params_(std::move(params)), typed_(std::move(typed)), run_(std::move(run)),
        lazy_(std::move(lazy)), structured_(structured), cuda_(std::move(cuda)) {}

  const std::string& family() const override { return family_; }
  const ParamSet& params() const override { return params_; }
  PlanResult<double> run(const AttentionInput<double>& input, Feedback& feedback) const override {
    return run_(input, typed_, feedback);
  }
  PlanResult<float> run(const AttentionInput<float>& input, Feedback& feedback) const override {
    return run_(input, typed_, feedback);
  }
  bool structuredPlan() const override { return structured_; }
  Mat<double> lazyOutput(const AttentionInput<double>& input, Feedback& feedback) const override {
    return lazy<double>(input, feedback);
  }
  Mat<float> lazyOutput(const AttentionInput<float>& input, Feedback& feedback) const override {
    return lazy<float>(input, feedback);
  }

  std::optional<std::string> cudaUnsupported() const override {
    if (!cuda_.run || !cudaKernelsBuilt())
      return cudaKernelsBuilt() ? family_ + " has no CUDA kernels yet"
                                : std::string("this TransportLens was built without CUDA (TL_CUDA=OFF)");
    return cuda_.unsupported ? cuda_.unsupported(typed_) : std::nullopt;
  }
  std::vector<PlanResult<float>> runCuda(const AttentionBatch<float>& heads, const DeviceRequest& request,
                                         Feedback& feedback) const override {
    if (const auto why = cudaUnsupported()) throw ResourceError(family_ + " cannot run on the GPU: " + *why);
    return runOnDevice(heads, request, cudaDenseKernels(), feedback);
  }
  bool hasDevicePath() const override { return cuda_.run && !(cuda_.unsupported && cuda_.unsupported(typed_)); }
  std::vector<PlanResult<float>> runOnDevice(const AttentionBatch<float>& heads, const DeviceRequest& request,
                                             const DenseKernels& kernels, Feedback& feedback) const override {
    if (!hasDevicePath()) throw ResourceError(family_ + " has no device path for these parameters");
    return cuda_.run(heads, typed_, request, kernels, feedback);
  }

 private:
  template <class T>
  Mat<T> lazy(const AttentionInput<T>& input, Feedback& feedback) const {
    if constexpr (!std::is_same_v<Lazy, NoLazyOutput>)
      if (structured_) return lazy_(input, typed_, feedback);
    throw InvalidArgument(family_ + " with these parameters forms the n×n plan: it has no lazy output A·V");
  }

  std::string family_;
  ParamSet params_;
  P typed_;
  Run run_;
  Lazy lazy_;
  bool structured_;
  CudaPath<P> cuda_;
};

template <class P, class Run, class Lazy = NoLazyOutput>
FamilyInfo familyInfo(const FamilyDefinition<P>& def, Run run, Lazy lazy = {}) {
  FamilyInfo info;
  info.name = def.text.name;
  info.title = def.text.title;
  info.description = def.text.description;
  info.schema = def.bindings.schema();
  info.devicePath = bool(def.cuda.run);
  if (info.devicePath && cudaKernelsBuilt()) info.backends.push_back(Backend::Cuda);
  info.backends.insert(info.backends.end(), def.otherBackends.begin(), def.otherBackends.end());
  info.create = [name = def.text.name, structured = def.structured, cuda = def.cuda, run,
                 lazy](const ParamSet& params) {
    P typed = P::from(params);
    const bool isStructured = structured && structured(typed);
    return std::unique_ptr<Operator>(std::make_unique<FamilyOperator<P, Run, Lazy>>(
        name, params, std::move(typed), run, lazy, isStructured, cuda));
  };
  return info;
}

}  // namespace tl
