// core/model/normalisers: the factory table and the registry agree. A family that declares Backend::Torch
// without a LibTorch normaliser, or a normaliser whose family does not declare it, fails here.
#include <algorithm>

#include <gtest/gtest.h>

#include "model/normalisers/torch_normalisers.h"

namespace tl {
namespace {

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

TEST(TorchNormaliserTable, HoldsExactlyTheFamiliesTheRegistryDeclaresTorch) {
  const std::vector<std::string> declared = OperatorRegistry::builtin().familiesOn(Backend::Torch);
  EXPECT_EQ(sorted(torchNormaliserFamilies()), sorted(declared));
  for (const auto& info : OperatorRegistry::builtin().families())
    EXPECT_EQ(hasTorchNormaliser(info.name), info.supports(Backend::Torch)) << info.name;
}

TEST(TorchNormaliserTable, BuildsEveryDeclaredFamilyUnderItsOwnName) {
  for (const auto& family : OperatorRegistry::builtin().familiesOn(Backend::Torch)) {
    const OperatorSpec spec = OperatorRegistry::builtin().resolve(family, {});
    const TorchNormaliser normaliser = makeTorchNormaliser(spec, /*heads=*/2, /*headDim=*/4);
    ASSERT_TRUE(normaliser) << family;
    EXPECT_EQ(normaliser->spec().family, family);
    EXPECT_EQ(normaliser->spec().toString(), spec.toString());
  }
}

}  // namespace
}  // namespace tl
