// The app's start-up session: with the model layer and the bundled sample checkpoint it is the checkpoint
// session (real [CLS] maps first); it runs, and its source resolves to sample_checkpoints/softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "model/vit_model_backend.h"
#include "session/engine.h"
#include "support/model_gui_test_support.h"
#include "vit/model_backend.h"
#include "widgets/shell/session_files.h"

namespace tl {
namespace {

TEST(DefaultSession, IsTheBundledCheckpointWhenModelsCanRun) {
  ASSERT_TRUE(haveModelBackend());  // installed for the process by model_gui_test_support
  const Session session = defaultSession();
  ASSERT_EQ(session.source.kind, SourceSpec::Kind::Model);
  EXPECT_TRUE(std::filesystem::equivalent(session.source.model.checkpoint,
                                          std::string(TL_SOURCE_DIR) + "/sample_checkpoints/softmax"));
  EXPECT_EQ(session.swapScope, SwapScope::Layer);
  for (const char* view : {"cls", "prediction"})
    EXPECT_NE(std::find(session.views.begin(), session.views.end(), view), session.views.end()) << view;
}

TEST(DefaultSession, FallsBackToThePointCloudWithoutTheModelLayer) {
  installModelBackend(nullptr);
  EXPECT_TRUE(defaultSession().source.isPointCloud());
  installVitModelBackend();
}

}  // namespace
}  // namespace tl
