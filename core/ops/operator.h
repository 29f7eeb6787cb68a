#pragma once
// An operator is a family (softmax, sinkhorn, ...) with resolved parameters. It runs on the CPU reference
// path in float or double; the registry (registry.h) creates operators from "family:key=value" specs, each
// through ops/family.h.
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

  // O = A·V without forming the n×n plan, for families whose plan has structure (ESP hard: weighted
  // permutations; LOT: rank-r factors). Needs V. Families without such a path throw InvalidArgument.
  virtual bool hasLazyApply() const { return false; }
  virtual Mat<double> applyLazy(const AttentionInput<double>& input, Feedback& feedback) const;
  virtual Mat<float> applyLazy(const AttentionInput<float>& input, Feedback& feedback) const;
};

}  // namespace tl
