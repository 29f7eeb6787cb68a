#pragma once
// An operator is a family (softmax, sinkhorn, ...) with resolved parameters. It runs on the CPU reference
// path in float or double; the registry (registry.h) creates operators from "family:key=value" specs.
#include <memory>
#include <string>
#include <type_traits>

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

// Detects `template <class T> Mat<T> lazyOutput(const AttentionInput<T>&, Feedback&) const` in Derived.
template <class D, class = void>
struct HasLazyOutput : std::false_type {};
template <class D>
struct HasLazyOutput<D, std::void_t<decltype(&D::template lazyOutput<double>)>> : std::true_type {};

// Implements both precisions from one templated `compute<T>(input, feedback)` in Derived, and the lazy
// path from `lazyOutput<T>(input, feedback)` when Derived has one.
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
  bool hasLazyApply() const override { return HasLazyOutput<Derived>::value; }
  Mat<double> applyLazy(const AttentionInput<double>& input, Feedback& feedback) const override {
    return lazy<double>(input, feedback);
  }
  Mat<float> applyLazy(const AttentionInput<float>& input, Feedback& feedback) const override {
    return lazy<float>(input, feedback);
  }

 private:
  template <class T>
  Mat<T> lazy(const AttentionInput<T>& input, Feedback& feedback) const {
    if constexpr (HasLazyOutput<Derived>::value)
      return static_cast<const Derived*>(this)->template lazyOutput<T>(input, feedback);
    else
      return Operator::applyLazy(input, feedback);
  }

  std::string family_;
  ParamSet params_;
};

}  // namespace tl
