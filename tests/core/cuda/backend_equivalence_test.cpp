// The backend equivalence suite (equivalence_suite.h) on the GPU: every family the registry lists on the cuda
// backend, every size. Label cuda; every test skips, saying why, without a GPU.
#include "cuda/backend.h"
#include "equivalence_suite.h"

namespace tl::equivalence {
namespace {

std::vector<PlanResult<float>> onGpu(const Operator& op, const AttentionBatch<float>& heads) {
  return op.runCuda(heads, DeviceRequest{}, noFeedback());
}

class BackendEquivalence : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (backendInfo().cudaDevices == 0) GTEST_SKIP() << "no CUDA device available: " << backendInfo().cudaStatus;
  }
};

TEST_P(BackendEquivalence, EveryCaseMatchesTheCpuReferenceWithinTheFloat32Error) {
  checkEveryCase(GetParam(), Sizes::Gpu, onGpu);
}

TEST_P(BackendEquivalence, ThePlanKeptOnTheGpuAnswersLikeItsDenseMatrix) { checkPlanKeptOnDevice(GetParam(), onGpu); }

// The heads of one layer run in one launch (batch = heads); each equals its own run, bit for bit, with and
// without padding (subsequence compacts every head by the shared mask, keep-queries masks the keys). Bit for
// bit because 40 keys fit one key tile: the launch choices that depend on the batch (key splits) cannot
// reorder a sum here.
TEST_P(BackendEquivalence, OneLaunchForALayersHeadsEqualsOneLaunchPerHead) { checkOneLaunchPerLayer(GetParam(), onGpu); }

std::vector<std::string> familiesOnCuda() { return OperatorRegistry::builtin().familiesOn(Backend::Cuda); }

INSTANTIATE_TEST_SUITE_P(Registry, BackendEquivalence, ::testing::ValuesIn(familiesOnCuda()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackendEquivalence);

const auto* const printer = ::testing::AddGlobalTestEnvironment(new WorstRatioPrinter);

}  // namespace
}  // namespace tl::equivalence
