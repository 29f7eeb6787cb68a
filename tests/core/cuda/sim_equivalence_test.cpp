// The backend equivalence suite (equivalence_suite.h) on the simulated device (sim_device.h: the kernels run
// thread by thread on the CPU): every family with a device path, in every build, on the small sizes, so each
// family's device orchestration is checked against its CPU reference without a GPU.
#include "equivalence_suite.h"
#include "sim_kernels.h"

namespace tl::equivalence {
namespace {

std::vector<PlanResult<float>> onSimulatedDevice(const Operator& op, const AttentionBatch<float>& heads) {
  return op.runOnDevice(heads, DeviceRequest{}, cuda::test::simulatedKernels(), noFeedback());
}

class SimulatedEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(SimulatedEquivalence, EveryCaseMatchesTheCpuReferenceWithinTheFloat32Error) {
  checkEveryCase(GetParam(), Sizes::Simulated, onSimulatedDevice);
}

TEST_P(SimulatedEquivalence, ThePlanKeptOnTheDeviceAnswersLikeItsDenseMatrix) {
  checkPlanKeptOnDevice(GetParam(), onSimulatedDevice);
}

TEST_P(SimulatedEquivalence, OneLaunchForALayersHeadsEqualsOneLaunchPerHead) {
  checkOneLaunchPerLayer(GetParam(), onSimulatedDevice);
}

// Every family with a device path, whether or not this build has CUDA.
std::vector<std::string> familiesWithADevicePath() {
  std::vector<std::string> names;
  for (const auto& family : OperatorRegistry::builtin().families())
    if (family.devicePath) names.push_back(family.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, SimulatedEquivalence, ::testing::ValuesIn(familiesWithADevicePath()),
                         [](const auto& info) { return info.param; });

const auto* const printer = ::testing::AddGlobalTestEnvironment(new WorstRatioPrinter);

}  // namespace
}  // namespace tl::equivalence
