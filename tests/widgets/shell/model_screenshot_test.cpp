// The model views as a researcher would show them, on a checkpoint shaped like the sample ones (28×28 grey
// Fashion-MNIST images, 4×4 patches → a 7×7 grid, 6 layers, 4 heads), trained here for a few steps on the
// generated two-class images (a bright horizontal or vertical bar), so its [CLS] maps have something to find.
// Screenshots and exported figures go to test::outputDir() for a person to look at; the test asserts the
// shapes, the true-class mark and that the grabs are not blank.
#include <QComboBox>
#include <gtest/gtest.h>

#include <filesystem>

#include "model/training/training_run.h"
#include "support/gui_test_support.h"
#include "support/model_gui_test_support.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/cls_map_view.h"
#include "widgets/views/prediction_view.h"

namespace tl {
namespace {

std::string trainedCheckpoint() {
  static const std::string out = [] {
    TrainingOptions o;
    o.dim = 32;
    o.depth = 6;
    o.heads = 4;
    o.mlp = 64;
    o.patch = 4;
    o.epochs = 3;
    o.batch = 32;
    o.lr = 3e-3;
    o.augment = false;
    o.threads = 1;
    o.seed = 7;
    o.out = test::scratchDir() + "/fashion-vit";
    trainVitOnFashionMnist(o);
    return o.out;
  }();
  return out;
}

class ModelScreenshots : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void save(QWidget* widget, const std::string& name) {
    const QImage shot = test::grabWhenPainted(*widget, 100);
    EXPECT_GT(test::distinctColors(shot), 100) << name;
    EXPECT_TRUE(shot.save(QString::fromStdString(test::outputDir() + "/" + name))) << name;
  }
};

TEST_F(ModelScreenshots, WindowAndModelViewsOnAFashionMnistShapedCheckpoint) {
  MainWindow window(test::modelSession(trainedCheckpoint(), 5, 1, SwapScope::Layer));
  window.resize(1600, 1000);
  window.show();
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) { return r.swapped.has_value(); }));

  auto* cls = dynamic_cast<ClsMapView*>(window.view("cls"));
  auto* prediction = dynamic_cast<PredictionView*>(window.view("prediction"));
  ASSERT_NE(cls, nullptr);
  ASSERT_NE(prediction, nullptr);
  ASSERT_TRUE(cls->showingContent()) << cls->message().toStdString();
  // Raised over the 3-D view once the docks have settled.
  EXPECT_TRUE(test::waitUntil([&] { return cls->isVisible() && prediction->isVisible(); }, std::chrono::seconds(10)));
  ASSERT_EQ(cls->panelCount(), 4);
  EXPECT_EQ(cls->largeValues().rows(), 7);
  EXPECT_EQ(cls->largeValues().cols(), 7);
  EXPECT_EQ(cls->imageValues().rows(), 28);
  // Test image 0 is a T-shirt/top (class 0) and the model names Fashion-MNIST's classes: it is marked.
  ASSERT_EQ(prediction->classCount(), 10);
  EXPECT_EQ(prediction->markedTrueClass(), 0);
  EXPECT_EQ(prediction->classLabel(0), "T-shirt/top (true)");
  save(&window, "model_window.png");
  save(cls, "cls_query.png");
  save(prediction, "prediction.png");

  auto* trace = cls->findChild<QComboBox*>("clsTrace");
  trace->setCurrentIndex(trace->findData(QString("difference")));
  save(cls, "cls_difference.png");
  auto* kind = cls->findChild<QComboBox*>("clsKind");
  trace->setCurrentIndex(trace->findData(QString("original")));
  kind->setCurrentIndex(kind->findData(QString("rollout")));
  cls->findChild<QComboBox*>("clsColours")->setCurrentText("magma");
  save(cls, "cls_rollout.png");

  // The figure export path (what File > Export view and `tlens render` write).
  ExportSettings settings;
  for (const std::string format : {"png", "pdf"}) {
    const std::string path = test::outputDir() + "/cls_export." + format;
    cls->exportFigure(path, format, settings);
    EXPECT_GT(std::filesystem::file_size(path), 5000u) << format;
  }
  prediction->exportFigure(test::outputDir() + "/prediction_export.png", "png", settings);
}

}  // namespace
}  // namespace tl
