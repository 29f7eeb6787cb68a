// The model views headless and in saved sessions: renderFigures (what `tlens render` calls) writes the
// [CLS] maps and the prediction of a model session in every format, skips them with the views' reason for a
// synthetic one, and the [CLS] view's settings travel with the session into a new window.
#include <QComboBox>
#include <QImage>
#include <QSlider>
#include <gtest/gtest.h>

#include <filesystem>

#include "session/engine.h"
#include "support/figure_file.h"
#include "support/gui_test_support.h"
#include "support/model_gui_test_support.h"
#include "widgets/shell/figure_export.h"
#include "widgets/shell/main_window.h"
#include "widgets/shell/view_factory.h"
#include "widgets/views/cls_map_view.h"

namespace tl {
namespace {

class ModelRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

TEST_F(ModelRenderTest, TheFactoryKnowsTheModelViews) {
  for (const char* name : {"cls", "prediction"}) {
    EXPECT_NE(std::find(knownViews().begin(), knownViews().end(), name), knownViews().end()) << name;
    EXPECT_EQ(makeView(name)->viewName(), name);
  }
}

TEST_F(ModelRenderTest, RenderFiguresWritesTheModelViewsOfAModelSession) {
  Session session = test::modelSession(test::fixtureCheckpoint("hf_softmax"), 1, 0, SwapScope::Layer);
  session.views = {"cls", "prediction"};
  session.viewState["cls"] = {{"kind", "rollout"}, {"trace", "difference"}, {"colours", "inferno"}};
  const SessionResult result = runSession(session);
  ASSERT_TRUE(result.swapped);
  const std::string dir = test::outputDir() + "/render_model";
  std::filesystem::remove_all(dir);
  const RenderReport report = renderFigures(result, dir);
  EXPECT_TRUE(report.skipped.empty()) << report.skipped.front();
  ASSERT_EQ(report.written.size(), 6u);  // two views × png, svg, pdf
  for (const std::string& path : report.written)
    EXPECT_TRUE(test::isFigure(test::readBytes(path), std::filesystem::path(path).extension().string().substr(1),
                               session.exportSettings))
        << path;
  const QImage png(QString::fromStdString(dir + "/cls.png"));
  EXPECT_GT(test::distinctColors(png), 100);
}

TEST_F(ModelRenderTest, RenderFiguresSkipsTheModelViewsOfASyntheticSession) {
  Session session = test::gaussianSession();
  session.views = {"cls", "prediction"};
  const RenderReport report = renderFigures(runSession(session), test::outputDir() + "/render_synthetic");
  EXPECT_TRUE(report.written.empty());
  ASSERT_EQ(report.skipped.size(), 2u);
  EXPECT_NE(report.skipped[0].find("not a model"), std::string::npos) << report.skipped[0];
}

TEST_F(ModelRenderTest, TheClsViewSettingsTravelWithTheSession) {
  Session saved;
  {
    MainWindow window(test::modelSession(test::fixtureCheckpoint("hf_softmax")));
    auto* cls = window.view("cls");
    auto* kind = cls->findChild<QComboBox*>("clsKind");
    kind->setCurrentIndex(kind->findData(QString("key")));
    cls->findChild<QComboBox*>("clsColours")->setCurrentText("magma");
    cls->findChild<QSlider*>("clsOpacity")->setValue(40);
    saved = Session::fromJson(window.currentSession().toJson());
  }
  EXPECT_EQ(saved.views, (std::vector<std::string>{"plan", "convergence", "cloud3d", "cls", "prediction"}));
  MainWindow window(saved);
  window.show();  // views draw once they are on screen
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) { return r.model != nullptr; }));
  auto* cls = dynamic_cast<ClsMapView*>(window.view("cls"));
  ASSERT_TRUE(test::waitUntil([&] { return cls->largeValues().size() > 0; }));
  EXPECT_EQ(cls->options().kind, ClsMapKind::Key);
  EXPECT_EQ(cls->findChild<QComboBox*>("clsColours")->currentText(), "magma");
  EXPECT_EQ(cls->findChild<QSlider*>("clsOpacity")->value(), 40);
  const SessionResult& r = *window.lastResult();
  EXPECT_EQ(cls->largeValues(), clsKeyMap(r.model->trace.layers[0].heads[0].attention, PatchGrid{2, 2}));
}

}  // namespace
}  // namespace tl
