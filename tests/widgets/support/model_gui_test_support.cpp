#include "support/model_gui_test_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "model/vit_model_backend.h"
#include "support/gui_test_support.h"
#include "support/two_class_fashion_mnist.h"

namespace tl::test {
namespace {

// Set up before the first test, so no QSettings and no dataset read can see the user's folders.
class ModelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::filesystem::create_directories(scratchDir() + "/fashion-mnist");
    std::filesystem::create_directories(scratchDir() + "/config");
    writeTwoClassFashionMnist(scratchDir() + "/fashion-mnist");
    ::setenv("TL_FASHION_MNIST_DIR", (scratchDir() + "/fashion-mnist").c_str(), 1);
    ::setenv("XDG_CONFIG_HOME", (scratchDir() + "/config").c_str(), 1);
    installVitModelBackend();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(scratchDir(), ec);
  }
};

[[maybe_unused]] ::testing::Environment* const environment = ::testing::AddGlobalTestEnvironment(new ModelEnvironment);

}  // namespace

std::string scratchDir() {
  static const std::string dir =
      (std::filesystem::temp_directory_path() / ("tl_widgets_model_tests_" + std::to_string(::getpid()))).string();
  return dir;
}

std::string fixtureCheckpoint(const std::string& name) { return std::string(TL_FIXTURE_DIR) + "/vit/" + name; }

Session modelSession(const std::string& checkpoint, int layer, int head, SwapScope scope) {
  Session s = smallCloudSession();
  s.source = SourceSpec::parse("model:checkpoint=" + checkpoint + ",image=fashion-mnist:test:0,layer=" +
                               std::to_string(layer) + ",head=" + std::to_string(head));
  s.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=5,eps=1")};
  s.swapScope = scope;
  return s;
}

bool waitForResult(const MainWindow& window, const std::function<bool(const SessionResult&)>& shown) {
  return waitUntil([&] {
    const auto r = window.lastResult();
    return r && shown(*r);
  });
}

}  // namespace tl::test
