// The device axis in the window (the operator panel's device choice reaches the session, the status bar says
// which device produced the result on screen and why not the GPU) and display tiles in the plan heatmap
// (large plans are drawn as block means or maxima, equal to the core's pooling).
#include <QComboBox>
#include <QLabel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <gtest/gtest.h>

#include "cuda/backend.h"
#include "support/gui_test_support.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/shell/main_window.h"
#include "widgets/shell/status_timing.h"
#include "widgets/views/plan_heatmap_view.h"

namespace tl {
namespace {

class DeviceAndPoolingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

TEST_F(DeviceAndPoolingTest, LargePlansAreDrawnAsTheCoresDisplayTiles) {
  MainWindow window(test::gaussianSession(64));
  window.show();
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  auto* heatmap = dynamic_cast<PlanHeatmapView*>(window.view("plan"));
  ASSERT_NE(heatmap, nullptr);
  EXPECT_FALSE(heatmap->pooled()) << "64 tokens are below the default threshold";
  EXPECT_EQ(heatmap->queries(), 64);

  heatmap->setPoolAbove(16);  // the user's threshold: 64 > 16, so 16 × 16 tiles of 4 × 4 entries
  ASSERT_TRUE(heatmap->pooled());
  ASSERT_EQ(heatmap->queries(), 16);
  ASSERT_EQ(heatmap->keys(), 16);
  const Plan<double>& plan = window.lastResult()->runs.front().result.plan;
  const PooledPlan<double> tiles = plan.pooled(16, 16);
  const MatD& A = plan.dense();
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      EXPECT_EQ(heatmap->cellValue(r, c), tiles.mean(r, c));
      EXPECT_NEAR(tiles.mean(r, c), A.block(4 * r, 4 * c, 4, 4).mean(), 1e-15);
    }
  heatmap->setPoolMax(true);
  EXPECT_EQ(heatmap->cellValue(3, 5), A.block(12, 20, 4, 4).maxCoeff());
  EXPECT_EQ(heatmap->saveState().value("poolAbove", 0), 16) << "the threshold is part of the session";
}

TEST_F(DeviceAndPoolingTest, TheDeviceChoiceReachesTheSessionAndTheStatusBarSaysWhatRan) {
  MainWindow window(test::gaussianSession(32));
  window.show();
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  auto* device = window.operatorPanel()->findChild<QComboBox*>("device");
  ASSERT_NE(device, nullptr);
  ASSERT_EQ(device->count(), 3);
  auto* status = window.findChild<QLabel*>("statusResultDevice");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->text().toStdString(), "result: cpu");

  const bool gpu = backendInfo().cudaDevices > 0;
  const auto* items = qobject_cast<QStandardItemModel*>(device->model());
  EXPECT_EQ(items->item(1)->isEnabled(), gpu) << "cuda is offered only with a usable GPU";

  const uint64_t before = window.lastResult()->requestId;
  device->setCurrentIndex(device->findText("auto"));
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult()->requestId > before; }));
  EXPECT_EQ(window.currentSession().device, DeviceChoice::Auto);
  const PlanResult<double>& r = window.lastResult()->runs.front().result;
  if (gpu) {
    EXPECT_EQ(r.backend, Backend::Cuda);
    EXPECT_TRUE(status->text().startsWith("result: cuda")) << status->text().toStdString();
  } else {
    // Never silent: the CPU ran in place of the GPU, and the status bar says so and why.
    EXPECT_EQ(r.backend, Backend::Cpu);
    EXPECT_EQ(status->text().toStdString(), "result: cpu (GPU not used)");
    EXPECT_FALSE(status->toolTip().isEmpty());
    EXPECT_EQ(status->toolTip().toStdString(), r.backendNote);
  }
}

// A GPU result shows the device's own time (from the result) next to the draw time; a CPU result its compute time
// in the session's precision.
TEST_F(DeviceAndPoolingTest, TheStatusBarShowsTheDevicesTimeForAGpuResult) {
  SessionResult result;
  result.session.precision = Precision::F64;
  result.seconds = 0.0456;
  result.runs.resize(1);
  PlanResult<double>& r = result.runs.front().result;
  r.seconds = 0.0123;
  r.backend = Backend::Cuda;
  StatusTiming t = statusTiming(result, 8.14);
  EXPECT_EQ(t.text.toStdString(), "f32 · GPU 12.3 ms · draw 8.1 ms");
  EXPECT_TRUE(t.toolTip.contains("GPU")) << t.toolTip.toStdString();
  EXPECT_TRUE(t.toolTip.contains("45.6 ms")) << "the whole request: " << t.toolTip.toStdString();

  r.backend = Backend::Cpu;
  t = statusTiming(result, 8.14);
  EXPECT_EQ(t.text.toStdString(), "f64 · compute 12.3 ms · draw 8.1 ms");
  EXPECT_FALSE(t.toolTip.contains("GPU")) << t.toolTip.toStdString();
}

}  // namespace
}  // namespace tl
