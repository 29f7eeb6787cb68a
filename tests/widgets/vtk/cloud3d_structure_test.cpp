// The operator's own structure in the 3-D view: LOT's pivots with the flows query → pivot → key that
// make up its plan, ESP's slice directions; nothing extra for other families or with the toggle off.
#include <QCheckBox>
#include <gtest/gtest.h>

#include "ops/esp/esp.h"
#include "session/engine.h"
#include "support/gui_test_support.h"
#include "widgets/vtk/cloud3d_view.h"
#include "widgets/vtk/cloud_scene.h"

namespace tl {
namespace {

class Cloud3DStructureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void SetUp() override {
    view_.resize(500, 400);
    view_.show();
  }
  void show(const std::string& family, const ParamSet& params = {}) {
    session_.operators = {OperatorRegistry::builtin().resolve(family, params)};
    result_ = std::make_shared<const SessionResult>(runSession(session_));
    view_.setResult(result_);
    ASSERT_TRUE(view_.showingScene());
  }
  QCheckBox* toggle() { return view_.findChild<QCheckBox*>("operatorStructure"); }
  // A picture for people, once the scene has been painted.
  void screenshot(const std::string& name) {
    const QImage shot = test::grabWhenPainted(view_, 20);
    EXPECT_GT(test::distinctColors(shot), 20) << name;
    ASSERT_TRUE(shot.save(QString::fromStdString(test::outputDir() + "/" + name)));
  }
  const MatD& extra(const char* name) { return result_->runs.front().result.extras.at(name); }

  Session session_ = test::smallCloudSession(40);
  std::shared_ptr<const SessionResult> result_;
  Cloud3DView view_;
};

TEST_F(Cloud3DStructureTest, LotDrawsPivotsAndFlowsThroughThem) {
  show("lot", {{"r", 7LL}});
  ASSERT_TRUE(toggle() && toggle()->isVisible() && toggle()->isChecked());
  const CloudSceneCounts& counts = view_.scene().counts();
  EXPECT_EQ(view_.scene().pivotsDrawn(), 7);
  EXPECT_EQ(view_.scene().pointsDrawn(), 80);  // queries and keys unchanged
  EXPECT_TRUE(counts.flows);
  // Every positive entry of P1 (40×7) and P2 (7×40) is a segment; all fit under the default line budget.
  const long long positive = (extra("lot_P1").array() > 0).count() + (extra("lot_P2").array() > 0).count();
  EXPECT_EQ(counts.entries, positive);
  EXPECT_EQ(view_.scene().linesDrawn(), positive);
  EXPECT_NEAR(counts.massShown, 1.0, 1e-12);
  screenshot("cloud3d_lot_flows.png");

  // Pruned: only the largest segments, and the mass they carry is reported.
  view_.setMaxLines(50);
  EXPECT_EQ(view_.scene().linesDrawn(), 50);
  EXPECT_LT(counts.massShown, 1.0);

  // Toggle off: the composed plan's entries again, no pivots.
  toggle()->setChecked(false);
  EXPECT_FALSE(view_.scene().counts().flows);
  EXPECT_EQ(view_.scene().pivotsDrawn(), 0);
  EXPECT_EQ(view_.scene().counts().entries, (result_->runs.front().result.plan.dense().array() > 0).count());
}

TEST_F(Cloud3DStructureTest, EspDrawsItsSliceDirections) {
  show("esp", {{"tau", 1.0}});
  ASSERT_TRUE(toggle() && toggle()->isVisible() && toggle()->isChecked());
  EXPECT_EQ(extra(EspExtras::directions).rows(), 3);  // axis slicer: L = d = 3
  EXPECT_EQ(view_.scene().directionsDrawn(), 3);
  EXPECT_EQ(view_.scene().counts().directions, 3);
  EXPECT_EQ(view_.scene().pivotsDrawn(), 0);
  screenshot("cloud3d_esp_directions.png");

  show("esp", {{"slicer", std::string("random")}, {"L", 12LL}});
  EXPECT_EQ(view_.scene().directionsDrawn(), 12);
  toggle()->setChecked(false);
  EXPECT_EQ(view_.scene().directionsDrawn(), 0);
}

TEST_F(Cloud3DStructureTest, OtherFamiliesDrawNoStructure) {
  show("sinkhorn");
  ASSERT_TRUE(toggle());
  EXPECT_FALSE(toggle()->isVisible());
  EXPECT_EQ(view_.scene().pivotsDrawn(), 0);
  EXPECT_EQ(view_.scene().directionsDrawn(), 0);
  EXPECT_FALSE(view_.scene().counts().flows);
}

}  // namespace
}  // namespace tl
