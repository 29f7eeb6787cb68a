#pragma once
// An operator is a family (softmax, sinkhorn, ...) with resolved parameters. It runs on the CPU reference
// path in float or double; the registry (registry.h) creates operators from "family:key=value" specs.
#include <memory>
#include <string>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/params.h"
#include "ops/plan_result.h"

namespace tl {

class Operator {
 public:
  virtual ~Operator() = default;
  virtual const std::string& family() const = 0;
  virtual const ParamSet& params() const = 0;
  virtual PlanResult<double> run(const AttentionInput<double>& input, Feedback& feedback) const = 0;
  virtual PlanResult<float> run(const AttentionInput<float>& input, Feedback& feedback) const = 0;
};

// Implements both precisions from one templated `compute<T>(input, feedback)` in Derived.
template <class Derived>
class TypedOperator : public Operator {
 public:
  TypedOperator(std::string family, ParamSet params) : family_(std::move(family)), params_(std::move(params)) {}
  const std::string& family() const override { return family_; }
  const ParamSet& params() const override { return params_; }
  PlanResult<double> run(const AttentionInput<double>& input, Feedback& feedback) const override {
    return static_cast<const Derived*>(this)->template compute<double>(input, feedback);
  }
  PlanResult<float> run(const AttentionInput<float>& input, Feedback& feedback) const override {
    return static_cast<const Derived*>(this)->template compute<float>(input, feedback);
  }

 private:
  std::string family_;
  ParamSet params_;
};

}  // namespace tl
