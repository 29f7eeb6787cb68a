// The window end to end: a slider move reaches the Engine, the new result reaches the heatmap, and what
// the heatmap holds is exactly what the core computes for the same session.
#include <QComboBox>
#include <QMessageBox>
#include <QLabel>
#include <QMessageBox>
#include <QSlider>
#include <gtest/gtest.h>

#include "session/engine.h"
#include "support/gui_test_support.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/plan_heatmap_view.h"

namespace tl {
namespace {

long long budgetShown(const MainWindow& w) {
  auto r = w.lastResult();
  return r ? getInt(r->session.operators.front().params, "T") : -1;
}

// Largest |heatmap cell − plan entry| over the whole plan; +inf when the shapes differ.
[[nodiscard]] double maxCellDifference(const PlanHeatmapView& view, const MatD& plan) {
  if (view.queries() != plan.rows() || view.keys() != plan.cols()) return INFINITY;
  double worst = 0;
  for (int i = 0; i < plan.rows(); ++i)
    for (int j = 0; j < plan.cols(); ++j) worst = std::max(worst, std::abs(view.cellValue(i, j) - plan(i, j)));
  return worst;
}

class MainWindowTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

TEST_F(MainWindowTest, TSliderRecomputesAndHeatmapEqualsCoreResult) {
  MainWindow window(test::smallCloudSession(60));
  window.show();
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  auto* heatmap = dynamic_cast<PlanHeatmapView*>(window.view("plan"));
  ASSERT_NE(heatmap, nullptr);
  const MatD before = window.lastResult()->runs.front().result.plan.dense();
  ASSERT_EQ(maxCellDifference(*heatmap, before), 0.0);

  auto* slider = window.operatorPanel()->findChild<QSlider*>("slider:T");
  ASSERT_NE(slider, nullptr);
  EXPECT_EQ(slider->minimum(), 1);
  EXPECT_EQ(slider->maximum(), 500);
  slider->setValue(3);
  ASSERT_TRUE(test::waitUntil([&] { return budgetShown(window) == 3; }));

  // The drawn data changed ...
  EXPECT_GT(maxCellDifference(*heatmap, before), 1e-6);
  // ... and equals a synchronous core run of the session the window now holds, bit for bit.
  const Session edited = window.currentSession();
  EXPECT_EQ(getInt(edited.operators.front().params, "T"), 3);
  const SessionResult reference = runSession(edited);
  EXPECT_EQ(maxCellDifference(*heatmap, reference.runs.front().result.plan.dense()), 0.0);

  auto* marginal = window.findChild<QLabel*>("statusMarginal");
  ASSERT_NE(marginal, nullptr);
  EXPECT_TRUE(marginal->text().startsWith("marginal error")) << marginal->text().toStdString();
}

// Tall figures scroll inside their docks, so the whole window, status bar included, fits the 1600 × 1000 screen
// the GUI tests use (and a laptop's). The bottom docks are tabs of one height: the ASAP and Certificates figures'
// minimum heights once made the window at least 1242 px tall.
TEST_F(MainWindowTest, TheWholeWindowFitsAThousandPixelScreen) {
  MainWindow window(test::smallCloudSession(60));
  window.show();
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  EXPECT_LE(window.minimumSizeHint().height(), 900);
  EXPECT_LE(window.frameGeometry().height(), 1000);
}

TEST_F(MainWindowTest, FastSliderMovesEndOnTheLastValue) {
  MainWindow window(test::smallCloudSession(80));
  window.show();
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  auto* slider = window.operatorPanel()->findChild<QSlider*>("slider:T");
  ASSERT_NE(slider, nullptr);
  // No events in between: the Engine supersedes the stale requests; the screen must settle on T = 41.
  for (int T = 30; T <= 41; ++T) slider->setValue(T);
  ASSERT_TRUE(test::waitUntil([&] { return budgetShown(window) == 41; }));
}

TEST_F(MainWindowTest, ScreenshotOfWholeWindowShowsAllViews) {
  MainWindow window(test::smallCloudSession(120));
  window.resize(1500, 950);
  window.show();
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  const QImage shot = test::grabWhenPainted(window, 200);
  ASSERT_FALSE(shot.isNull());
  EXPECT_GT(test::distinctColors(shot), 200);  // plots, colour map and the 3-D scene, not a blank window
  const std::string path = test::outputDir() + "/main_window.png";
  ASSERT_TRUE(shot.save(QString::fromStdString(path)));
  // The 3-D dock drew something other than its background.
  QWidget* cloud = window.view("cloud3d");
  ASSERT_NE(cloud, nullptr);
  EXPECT_GT(test::distinctColors(test::grabWhenPainted(*cloud, 20)), 20);
}

TEST_F(MainWindowTest, ViewStateTravelsWithTheSession) {
  Session session = test::smallCloudSession(40);
  session.viewState["plan"] = {{"logColor", true}};
  session.viewState["cloud3d"] = {{"maxLines", 321}};
  MainWindow window(session);
  const Session saved = window.currentSession();
  EXPECT_EQ(saved.viewState.at("plan").at("logColor"), true);
  EXPECT_EQ(saved.viewState.at("cloud3d").at("maxLines"), 321);
  EXPECT_TRUE(saved.viewState.contains("convergence"));
  // And through the JSON file format the lead's Session defines.
  const Session reread = Session::fromJson(saved.toJson());
  EXPECT_EQ(reread.viewState, saved.viewState);
}

// Every registered family can be picked in the operator panel and reaches the screen with its defaults,
// or, where its defaults cannot run on this input (asap needs a compiled layer), says why in the error box.
TEST_F(MainWindowTest, EveryFamilyFromTheRegistryComputesOrExplainsFromThePanel) {
  MainWindow window(test::gaussianSession(64));
  ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; }));
  auto* family = window.operatorPanel()->findChild<QComboBox*>("operatorFamily");
  ASSERT_NE(family, nullptr);
  ASSERT_EQ(family->count(), int(OperatorRegistry::builtin().families().size()));
  int computed = 0;
  for (int index = 0; index < family->count(); ++index) {
    const std::string name = family->itemData(index).toString().toStdString();
    if (auto* box = window.findChild<QMessageBox*>()) box->hide();
    family->setCurrentIndex(index);
    bool ran = false;
    const bool answered = test::waitUntil([&] {
      auto r = window.lastResult();
      ran = r && r->session.operators.front().family == name;
      auto* box = window.findChild<QMessageBox*>();
      return ran || (box && box->isVisible() && box->informativeText().contains(QString::fromStdString(name)));
    });
    EXPECT_TRUE(answered) << name;
    computed += ran;
  }
  EXPECT_GE(computed, family->count() - 1);
}

}  // namespace
}  // namespace tl
