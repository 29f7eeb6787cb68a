// The 3-D view holds what it claims: n points per side and the requested number of largest plan entries.
#include <QLabel>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "session/engine.h"
#include "support/gui_test_support.h"
#include "widgets/vtk/cloud3d_view.h"

namespace tl {
namespace {

class Cloud3DViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

TEST_F(Cloud3DViewTest, HoldsPointsAndTheLargestLines) {
  auto result = std::make_shared<const SessionResult>(runSession(test::smallCloudSession(50)));
  Cloud3DView view;
  view.resize(500, 400);
  view.show();
  view.setMaxLines(100);
  view.setResult(result);
  ASSERT_TRUE(view.showingScene());
  EXPECT_EQ(view.scene().pointsDrawn(), 100);  // 50 queries + 50 keys
  EXPECT_EQ(view.scene().linesDrawn(), 100);
  EXPECT_EQ(view.scene().counts().lines, 100);

  // The drawn lines are the largest entries: their mass share is the sum of the top 100 entries.
  const MatD& plan = result->runs.front().result.plan.dense();
  std::vector<double> entries(plan.data(), plan.data() + plan.size());
  std::sort(entries.rbegin(), entries.rend());
  const double top = std::accumulate(entries.begin(), entries.begin() + 100, 0.0);
  EXPECT_NEAR(view.scene().counts().massShown, top / plan.sum(), 1e-12);

  // Asking for more lines than entries draws every nonzero entry once.
  view.setMaxLines(10000);
  const long long nonzero = (plan.array() > 0).count();
  EXPECT_EQ(view.scene().linesDrawn(), nonzero);
}

TEST_F(Cloud3DViewTest, SaysWhyForSourcesThatAreNotPointClouds) {
  Cloud3DView view;
  view.setResult(std::make_shared<const SessionResult>(runSession(test::gaussianSession(20))));
  EXPECT_FALSE(view.showingScene());
  auto* message = view.findChild<QLabel*>("cloud3dMessage");
  ASSERT_NE(message, nullptr);
  EXPECT_TRUE(message->text().contains("point-cloud")) << message->text().toStdString();
  EXPECT_EQ(view.exportUnavailableReason(), "the source is not a point cloud");
}

TEST_F(Cloud3DViewTest, CameraIsPartOfTheViewState) {
  auto result = std::make_shared<const SessionResult>(runSession(test::smallCloudSession(30)));
  Cloud3DView first;
  first.setResult(result);
  nlohmann::json state = first.saveState();
  ASSERT_TRUE(state.contains("camera"));
  state["camera"]["position"] = {0.0, 0.0, 9.0};
  state["camera"]["focalPoint"] = {0.0, 0.0, 0.0};
  state["camera"]["viewUp"] = {0.0, 1.0, 0.0};
  Cloud3DView second;
  second.restoreState(state);
  second.setResult(result);
  EXPECT_EQ(second.saveState().at("camera").at("position"), nlohmann::json({0.0, 0.0, 9.0}));
}

}  // namespace
}  // namespace tl
