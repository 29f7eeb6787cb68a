#include "ops/registry.h"

#include <algorithm>

#include "common/errors.h"
#include "ops/asap/asap.h"
#include "ops/banded/banded.h"
#include "ops/diff/diff.h"
#include "ops/esp/esp.h"
#include "ops/lot/lot.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/softmax/softmax.h"

namespace tl {

std::string OperatorSpec::toString() const {
  const auto& info = OperatorRegistry::builtin().get(family);
  const std::string params_ = formatParams(params, &info.schema);
  return params_.empty() ? family : family + ":" + params_;
}

const OperatorRegistry& OperatorRegistry::builtin() {
  static const OperatorRegistry registry = [] {
    OperatorRegistry r;
    registerSoftmax(r);
    registerSinkhorn(r);
    registerEsp(r);
    registerLot(r);
    registerAsap(r);
    registerBanded(r);
    registerDiff(r);
    return r;
  }();
  return registry;
}

bool FamilyInfo::supports(Backend backend) const {
  return std::find(backends.begin(), backends.end(), backend) != backends.end();
}

std::vector<std::string> OperatorRegistry::familiesOn(Backend backend) const {
  std::vector<std::string> names;
  for (const auto& f : families_)
    if (f.supports(backend)) names.push_back(f.name);
  return names;
}

void OperatorRegistry::add(FamilyInfo family) { families_.push_back(std::move(family)); }

const FamilyInfo& OperatorRegistry::get(const std::string& name) const {
  for (const auto& f : families_)
    if (f.name == name) return f;
  std::string known;
  for (const auto& f : families_) known += (known.empty() ? "" : ", ") + f.name;
  throw InvalidArgument("unknown operator family '" + name + "' (known: " + known + ")");
}

OperatorSpec OperatorRegistry::parse(const std::string& text) const {
  const auto [family, params] = splitFamily(text);
  const auto& info = get(family);
  return {family, info.schema.parse(params, family)};
}

OperatorSpec OperatorRegistry::resolve(const std::string& family, const ParamSet& given) const {
  return {family, get(family).schema.resolve(given, family)};
}

std::unique_ptr<Operator> OperatorRegistry::create(const OperatorSpec& spec) const {
  const auto& info = get(spec.family);
  return info.create(info.schema.resolve(spec.params, spec.family));
}

}  // namespace tl
