#include "model/normalisers/torch_normalisers.h"

#include <algorithm>
#include <utility>

#include "model/normalisers/families.h"

namespace tl {
namespace {

// Family name → factory: the one place that names the LibTorch normalisers.
const std::vector<std::pair<std::string, TorchNormaliserFactory>>& factories() {
  static const std::vector<std::pair<std::string, TorchNormaliserFactory>> table = {
      {"softmax", makeSoftmaxNormaliser},
      {"sinkhorn", makeSinkhornNormaliser},
      {"esp", makeEspNormaliser},
      {"lot", makeLotNormaliser},
  };
  return table;
}

}  // namespace

bool hasTorchNormaliser(const std::string& family) {
  const std::vector<std::string> families = OperatorRegistry::builtin().familiesOn(Backend::Torch);
  return std::find(families.begin(), families.end(), family) != families.end();
}

std::vector<std::string> torchNormaliserFamilies() {
  std::vector<std::string> names;
  for (const auto& entry : factories()) names.push_back(entry.first);
  return names;
}

TorchNormaliser makeTorchNormaliser(const OperatorSpec& spec, int heads, int headDim) {
  // Resolving again checks names, ranges and defaults with the registry's own schema.
  OperatorSpec resolved = OperatorRegistry::builtin().resolve(spec.family, spec.params);
  const auto& table = factories();
  const auto found = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == resolved.family; });
  if (found != table.end()) return found->second(std::move(resolved), heads, headDim);
  std::string trainable;
  for (const auto& family : OperatorRegistry::builtin().familiesOn(Backend::Torch))
    trainable += (trainable.empty() ? "" : ", ") + family;
  throw InvalidArgument(resolved.family + " has no LibTorch (trainable) version; a model can use " + trainable +
                        ", and every family can be swapped into a trained model through the core path");
}

}  // namespace tl
