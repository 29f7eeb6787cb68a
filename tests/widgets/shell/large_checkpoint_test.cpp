// Checkpoints larger than the bundled ones: the window keeps its event loop running while one loads (the load
// runs on the Engine's worker and reports its progress to the status bar's progress bar), and the Prediction view
// of a 1000-class model shows the top k classes with the true class marked even when it ranks last.
#include <QElapsedTimer>
#include <QProgressBar>
#include <QSpinBox>
#include <QTimer>
#include <qcustomplot.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "data/random.h"
#include "vit/vit_checkpoint.h"
#include "support/gui_test_support.h"
#include "support/model_gui_test_support.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/prediction_view.h"

namespace tl {
namespace {

// A Hugging Face ViT config for 28×28 grey images; `labels` names the classes.
VitConfig vitConfig(int hidden, int layers, int heads, int patch, const std::vector<std::string>& labels) {
  nlohmann::json id2label = nlohmann::json::object();
  for (size_t i = 0; i < labels.size(); ++i) id2label[std::to_string(i)] = labels[i];
  const nlohmann::json config = {{"model_type", "vit"},       {"hidden_size", hidden},     {"num_hidden_layers", layers},
                                 {"num_attention_heads", heads}, {"intermediate_size", 4 * hidden},
                                 {"image_size", 28},           {"patch_size", patch},       {"num_channels", 1},
                                 {"id2label", id2label}};
  return parseVitConfig(config.dump(), "test config");
}

// Weights ~ N(0, 0.02) from a seeded generator (LayerNorm scales 1), written as a checkpoint folder. With
// `classifierBias` the classifier's weights are zero and its bias is this: the logits are the bias, whatever the image.
std::string writeCheckpoint(const std::string& name, const VitConfig& config, const std::vector<float>& classifierBias = {}) {
  SeededRandom random(3);
  VitCheckpoint checkpoint{config, {}};
  for (const auto& [tensorName, shape] : vitTensorShapes(config)) {
    HostTensor& t = checkpoint.tensors[tensorName];
    t.shape = shape;
    t.values.resize(size_t(t.numel()));
    const bool scale = tensorName.find("layernorm") != std::string::npos && tensorName.find(".weight") != std::string::npos;
    for (float& v : t.values) v = scale ? 1.0f : float(0.02 * random.normal());
  }
  if (!classifierBias.empty()) {
    std::vector<float>& weights = checkpoint.tensors.at("classifier.weight").values;
    std::fill(weights.begin(), weights.end(), 0.0f);
    checkpoint.tensors.at("classifier.bias").values = classifierBias;
  }
  const std::string dir = test::scratchDir() + "/" + name;
  writeVitCheckpoint(dir, checkpoint);
  return dir;
}

std::vector<std::string> fashionLabelsAndMore(int count) {
  std::vector<std::string> labels = {"T-shirt/top", "Trouser"};  // the generated dataset's two classes
  for (int i = int(labels.size()); i < count; ++i) labels.push_back("class " + std::to_string(i));
  return labels;
}

TEST(LargeCheckpoint, TheEventLoopRunsAndAProgressBarMovesWhileACheckpointLoads) {
  test::ensureApplication();
  // 12 layers of width 384 on 2×2 patches (197 tokens, as ViT-B/16 has; 21M parameters, 85 MB): opening it and
  // running the image take long enough to tell a turning event loop from a frozen one.
  const std::string checkpoint = writeCheckpoint("wide-vit", vitConfig(384, 12, 6, 2, fashionLabelsAndMore(10)));

  MainWindow window(test::smallCloudSession());
  window.show();
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult&) { return true; }));
  auto* bar = window.findChild<QProgressBar*>("statusProgress");
  ASSERT_NE(bar, nullptr);
  EXPECT_TRUE(bar->isHidden());
  // Ticks of a 5 ms timer from File › Open until the model's result arrives: a load on the GUI thread would stop
  // them for its whole length.
  QElapsedTimer clock;
  std::vector<qint64> ticks;
  std::vector<int> barValues;
  QTimer timer;
  QObject::connect(&timer, &QTimer::timeout, [&] {
    if (window.lastResult()->model) return;
    ticks.push_back(clock.elapsed());
    if (bar->isVisible()) barValues.push_back(bar->value());
  });
  clock.start();
  timer.start(5);
  window.openFile(QString::fromStdString(checkpoint));
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) { return r.model != nullptr; }));
  timer.stop();

  // A load on the GUI thread would let no tick through between File › Open and its result, and the bar could not
  // be seen part-way. How evenly the ticks come depends on what else the machine runs, so the gaps are reported,
  // not asserted.
  qint64 longestGap = ticks.empty() ? 0 : ticks.front();
  for (size_t i = 1; i < ticks.size(); ++i) longestGap = std::max(longestGap, ticks[i] - ticks[i - 1]);
  ::testing::Test::RecordProperty("longest_gap_ms", int(longestGap));
  ::testing::Test::RecordProperty("load_ms", int(ticks.empty() ? 0 : ticks.back()));
  EXPECT_GE(ticks.size(), 10u) << "the event loop turned " << ticks.size() << " times during the load";
  EXPECT_TRUE(std::any_of(barValues.begin(), barValues.end(), [&](int v) { return v > 0 && v < bar->maximum(); }))
      << "the bar was never seen part-way (" << barValues.size() << " values seen)";
  // It goes when the result is on screen.
  EXPECT_TRUE(bar->isHidden());
}

TEST(LargeCheckpoint, PredictionShowsTheTopKOfAThousandClassesAndTheTrueClassBelowThem) {
  test::ensureApplication();
  const int classes = 1000;
  // Class c's bias rises with c, so the order is fixed: class 999 first; the true class (0, the image is a
  // Fashion-MNIST T-shirt) gets the lowest of all and ranks last.
  std::vector<float> bias(classes);
  for (int c = 0; c < classes; ++c) bias[size_t(c)] = 0.01f * float(c);
  bias[0] = -20.0f;
  const std::string checkpoint =
      writeCheckpoint("thousand-classes", vitConfig(32, 2, 2, 7, fashionLabelsAndMore(classes)), bias);

  MainWindow window(test::modelSession(checkpoint));
  window.resize(1500, 950);
  window.show();
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) { return r.model != nullptr; }));
  auto* prediction = dynamic_cast<PredictionView*>(window.view("prediction"));
  ASSERT_NE(prediction, nullptr);
  ASSERT_EQ(prediction->classCount(), classes);
  EXPECT_EQ(prediction->topK(), PredictionView::kDefaultTopK);

  auto expectTopK = [&](int k) {
    const std::vector<int> shown = prediction->shownClasses();
    ASSERT_EQ(int(shown.size()), k + 1) << "k bars and the true class";
    for (int row = 0; row < k; ++row) EXPECT_EQ(shown[size_t(row)], classes - 1 - row) << row;
    for (int row = 1; row < k; ++row)
      EXPECT_GE(prediction->probability(shown[size_t(row - 1)]), prediction->probability(shown[size_t(row)]));
    EXPECT_EQ(shown.back(), 0);
    EXPECT_EQ(prediction->markedTrueClass(), 0);
    EXPECT_EQ(prediction->classLabel(0), "T-shirt/top (true, #1000)");
    EXPECT_EQ(prediction->classLabel(classes - 1), "class 999");
    EXPECT_TRUE(prediction->classLabel(500).isEmpty()) << "class 500 is not among the top " << k;
  };
  expectTopK(PredictionView::kDefaultTopK);
  // A thousand classes share the mass (the largest is about 1 %): the probability axis ends just past the longest
  // bar instead of at 1, where every bar would be a sliver.
  const double largest = prediction->probability(classes - 1);
  ASSERT_LT(largest, 0.05);
  const QCPRange axis = prediction->plot()->axisRect()->axis(QCPAxis::atBottom)->range();
  EXPECT_NEAR(axis.upper, 1.16 * largest, 1e-12);
  // k follows its spin box and is saved with the session.
  auto* spin = window.findChild<QSpinBox*>("predictionTopK");
  ASSERT_NE(spin, nullptr);
  spin->setValue(3);
  expectTopK(3);
  EXPECT_EQ(window.currentSession().viewState.at("prediction").at("top_k"), 3);
  QImage grab = prediction->grab().toImage();
  EXPECT_TRUE(grab.save(QString::fromStdString(test::outputDir() + "/prediction_top3_of_1000.png")));
}

}  // namespace
}  // namespace tl
