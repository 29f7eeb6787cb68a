#pragma once
// How an operator family joins the registry, written once for every family. A family supplies
//  - its text (name, title, one-line description),
//  - its typed parameters P bound to the schema (common/param_bindings.h), and P::from, which fills them from
//    resolved parameters (through the bindings, then reading files and checking combinations the schema
//    cannot express),
//  - its CPU reference as one generic callable (input, params, feedback) → PlanResult<T>, instantiated for
//    T = double and float,
//  - optionally a lazy path (input, params, feedback) → O = A·V without the n×n plan, with a predicate for the
//    parameters it covers (ESP: hard sorting only),
//  - the backends beside the CPU that implement it (ops/backend.h).
// `familyInfo` turns that into the registry's FamilyInfo; the operator it creates is a FamilyOperator.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/param_bindings.h"
#include "ops/operator.h"
#include "ops/registry.h"

namespace tl {

struct FamilyText {
  std::string name;         // "sinkhorn"
  std::string title;        // "Sinkhorn"
  std::string description;  // one line for help and tooltips
};

// Marks a family without a lazy path.
struct NoLazyPath {};

template <class P, class Run, class Lazy>
class FamilyOperator final : public Operator {
 public:
  FamilyOperator(std::string family, ParamSet params, P typed, Run run, Lazy lazy, bool lazyApplies)
      : family_(std::move(family)), params_(std::move(params)), typed_(std::move(typed)), run_(std::move(run)),
        lazy_(std::move(lazy)), lazyApplies_(lazyApplies) {}

  const std::string& family() const override { return family_; }
  const ParamSet& params() const override { return params_; }

  PlanResult<double> run(const AttentionInput<double>& input, Feedback& feedback) const override {
    return run_(input, typed_, feedback);
  }
  PlanResult<float> run(const AttentionInput<float>& input, Feedback& feedback) const override {
    return run_(input, typed_, feedback);
  }

  bool hasLazyApply() const override { return lazyApplies_; }
  Mat<double> applyLazy(const AttentionInput<double>& input, Feedback& feedback) const override {
    return lazy<double>(input, feedback);
  }
  Mat<float> applyLazy(const AttentionInput<float>& input, Feedback& feedback) const override {
    return lazy<float>(input, feedback);
  }

 private:
  template <class T>
  Mat<T> lazy(const AttentionInput<T>& input, Feedback& feedback) const {
    if constexpr (std::is_same_v<Lazy, NoLazyPath>) {
      return Operator::applyLazy(input, feedback);
    } else {
      if (!lazyApplies_) return Operator::applyLazy(input, feedback);
      return lazy_(input, typed_, feedback);
    }
  }

  std::string family_;
  ParamSet params_;
  P typed_;
  Run run_;
  Lazy lazy_;
  bool lazyApplies_;
};

template <class P>
struct FamilyDefinition {
  FamilyText text;
  const ParamBindings<P>& bindings;
  std::vector<Backend> otherBackends = {};  // beside Backend::Cpu
};

template <class P, class Run, class Lazy = NoLazyPath>
FamilyInfo familyInfo(const FamilyDefinition<P>& def, Run run, Lazy lazy = {},
                      std::function<bool(const P&)> lazyApplies = {}) {
  FamilyInfo info;
  info.name = def.text.name;
  info.title = def.text.title;
  info.description = def.text.description;
  info.schema = def.bindings.schema();
  info.backends.insert(info.backends.end(), def.otherBackends.begin(), def.otherBackends.end());
  const std::string name = def.text.name;
  info.create = [name, run, lazy, lazyApplies](const ParamSet& params) -> std::unique_ptr<Operator> {
    P typed = P::from(params);
    const bool applies = !std::is_same_v<Lazy, NoLazyPath> && (!lazyApplies || lazyApplies(typed));
    return std::make_unique<FamilyOperator<P, Run, Lazy>>(name, params, std::move(typed), run, lazy, applies);
  };
  return info;
}

}  // namespace tl
