#pragma once
// Family name → implementation + parameter schema. UI, CLI, Session and tests enumerate this one list.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/params.h"
#include "ops/backend.h"
#include "ops/operator.h"

namespace tl {

struct FamilyInfo {
  std::string name;         // "sinkhorn"
  std::string title;        // "Sinkhorn"
  std::string description;  // one line for help and tooltips
  ParamSchema schema;
  // Builds an operator from parameters already resolved against `schema`; may throw InvalidArgument
  // for combinations the schema alone cannot express.
  std::function<std::unique_ptr<Operator>(const ParamSet&)> create;
  // The implementations this build has, cpu first (ops/backend.h). The CUDA equivalence suite and the
  // LibTorch normalisers enumerate the families through this list instead of keeping their own.
  std::vector<Backend> backends{Backend::Cpu};
  bool supports(Backend backend) const;
  // The family has a device path (ops/device_path.h), in every build: the CPU tests run it on the simulated
  // device; `backends` lists cuda only where this build has the GPU kernels.
  bool devicePath = false;
};

// A family plus its resolved parameters: what Session JSON stores and "family:key=value" strings mean.
struct OperatorSpec {
  std::string family;
  ParamSet params;

  std::string toString() const;  // "sinkhorn:T=10,eps=0.5,mask_mode=subsequence"
};

class OperatorRegistry {
 public:
  // softmax, sinkhorn, ... registered in a fixed order.
  static const OperatorRegistry& builtin();

  void add(FamilyInfo family);
  const std::vector<FamilyInfo>& families() const { return families_; }
  // Throws InvalidArgument listing the known families.
  const FamilyInfo& get(const std::string& name) const;
  // Names of the families that `backend` implements, in registry order.
  std::vector<std::string> familiesOn(Backend backend) const;

  // "sinkhorn:T=10,eps=0.5" → resolved spec (defaults filled, ranges checked).
  OperatorSpec parse(const std::string& text) const;
  OperatorSpec resolve(const std::string& family, const ParamSet& given) const;
  std::unique_ptr<Operator> create(const OperatorSpec& spec) const;

 private:
  std::vector<FamilyInfo> families_;
};

}  // namespace tl
