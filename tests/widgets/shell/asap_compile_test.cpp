// Model › Compile this checkpoint into ASAP… (docs/gui.md#compiling-a-checkpoint-into-asap) on the tiny Sinkhorn
// ViT of tests/fixtures/vit (sinkhorn:T=4,eps=0.5, 2 layers of 2 heads) with the generated Fashion-MNIST: the
// dialog's settings reach the compiler, the compiled state is written, the compiled layers are swapped in (the
// prediction view's swapped run equals the core's VitRunner with asap:compiled=DIR in both layers, the plan the
// compiled operator of the source's layer), switching back restores the trained operator, and Cancel stops a
// compilation without writing anything.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QTimer>
#include <gtest/gtest.h>

#include <filesystem>

#include "model/vit_inference.h"
#include "ops/asap/compiled_asap.h"
#include "session/engine.h"
#include "support/gui_test_support.h"
#include "support/model_gui_test_support.h"
#include "widgets/shell/asap_compile_dialog.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/prediction_view.h"

namespace tl {
namespace {

VecD softmax(const VecD& logits) {
  const VecD e = (logits.array() - logits.maxCoeff()).exp();
  return e / e.sum();
}

class AsapCompileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
  void SetUp() override {
    window_ = std::make_unique<MainWindow>(test::modelSession(checkpoint_, 1, 0, SwapScope::None));
    window_->resize(1500, 950);
    window_->show();
    ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.model != nullptr; }));
  }
  const std::string checkpoint_ = test::fixtureCheckpoint("hf_sinkhorn_T4");
  std::unique_ptr<MainWindow> window_;
};

// The feature family combo box (docs/gui.md#compiling-a-checkpoint-into-asap) maps to the options both ways,
// and the dialog refuses KL with predict-both (KL is not defined for it) with the reason shown.
TEST(AsapCompileDialogFeatures, TheFamilyComboIsTheOptionAndKlWithPredictBothIsRefused) {
  test::ensureApplication();
  AsapCompileDialog dialog("ckpt", 2);
  auto* features = dialog.findChild<QComboBox*>("asapCompileFeatures");
  ASSERT_NE(features, nullptr);
  EXPECT_EQ(dialog.options().features, AsapFeatures::Potentials);
  for (AsapFeatures family : {AsapFeatures::Raw, AsapFeatures::RankDisplacement, AsapFeatures::PredictBoth}) {
    AsapCompileOptions o;
    o.features = family;
    dialog.setOptions(o);
    EXPECT_EQ(features->currentData().toString().toStdString(), asapFeaturesName(family));
    EXPECT_EQ(dialog.options().features, family);
  }
  dialog.findChild<QComboBox*>("asapCompileFit")->setCurrentIndex(1);  // KL
  dialog.accept();
  EXPECT_EQ(dialog.result(), QDialog::Rejected);
  EXPECT_NE(dialog.findChild<QLabel*>("asapCompileProblem")->text().indexOf("predict-both"), -1);
  features->setCurrentIndex(features->findData("raw"));
  dialog.accept();
  EXPECT_EQ(dialog.result(), QDialog::Accepted);
}

TEST_F(AsapCompileTest, TheDialogCompilesWritesAndSwapsTheCompiledLayersIn) {
  const std::string out = test::scratchDir() + "/asap_gui";
  std::filesystem::remove_all(out);
  QSignalSpy finished(window_.get(), &MainWindow::asapCompileFinished);
  bool dialogSeen = false;
  // The dialog is modal: fill it in from the event loop once it is up.
  QTimer::singleShot(200, [&] {
    auto* dialog = qobject_cast<AsapCompileDialog*>(QApplication::activeModalWidget());
    ASSERT_NE(dialog, nullptr);
    dialogSeen = true;
    EXPECT_EQ(dialog->options().out, AsapCompileDialog::defaultOutput(checkpoint_));
    EXPECT_TRUE(dialog->options().layers.empty()) << "every layer by default";
    dialog->findChild<QSpinBox*>("asapCalibFirst")->setValue(0);
    dialog->findChild<QSpinBox*>("asapCalibLast")->setValue(31);
    dialog->findChild<QSpinBox*>("asapCompileSlices")->setValue(6);
    dialog->findChild<QLineEdit*>("asapCompileOut")->setText(QString::fromStdString(out));
    dialog->grab().save(QString::fromStdString(test::outputDir() + "/asap_compile_dialog.png"));
    dialog->accept();
  });
  window_->findChild<QAction*>("compileAsap")->trigger();
  ASSERT_TRUE(dialogSeen);
  ASSERT_TRUE(test::waitUntil([&] { return finished.count() == 1; }));
  ASSERT_TRUE(finished.front().at(0).toBool()) << finished.front().at(2).toString().toStdString();

  // The compiled state, as the dialog asked.
  ASSERT_TRUE(std::filesystem::exists(out + "/asap.safetensors"));
  const CompiledAsap compiled = loadCompiledAsap(out);
  EXPECT_EQ(compiled.calibration, "fashion-mnist:train:0-31");
  ASSERT_EQ(compiled.layers.size(), 2u);
  for (const auto& l : compiled.layers) {
    EXPECT_EQ(l.slices.rows(), 6);
    EXPECT_EQ(l.instances, 32 * 2);  // images × heads
  }

  // Swapped into both layers: the prediction is the core's compiled model on the same image.
  const std::string op = compiledAsapOperator(compiled, out);
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) {
    return r.session.operators.front().family == "asap" && r.swapped.has_value();
  }));
  const SessionResult r = *window_->lastResult();
  EXPECT_EQ(r.swappedLayers, (std::vector<int>{0, 1}));
  EXPECT_TRUE(window_->findChild<QAction*>("useCompiledAsap")->isChecked());
  EXPECT_TRUE(window_->findChild<QAction*>("useCompiledAsap")->text().contains("all 2"));
  const VitRunner runner = VitRunner::open(checkpoint_);
  const VitTrace own = runner.run(loadModelImage(r.session.source.model.image, runner.config()).pixels);
  const OperatorSpec spec = OperatorRegistry::builtin().parse(op);
  const VitTrace swapped = runner.rerun(own, 0, {{0, spec}, {1, spec}});
  auto* prediction = dynamic_cast<PredictionView*>(window_->view("prediction"));
  ASSERT_TRUE(prediction->showingSwapped());
  const VecD expected = softmax(swapped.logits);
  for (int c = 0; c < prediction->classCount(); ++c)
    EXPECT_NEAR(prediction->swappedProbability(c), expected[c], 1e-12) << c;
  // The plan is the compiled operator of the source's layer (1) on its head, in the session's precision.
  const auto layer1 =
      runOperator(OperatorRegistry::builtin().parse(op + ",layer=1"), *r.input, r.session.precision);
  EXPECT_EQ((r.runs.front().result.plan.dense() - layer1.plan.dense()).cwiseAbs().maxCoeff(), 0.0);
  window_->grab().save(QString::fromStdString(test::outputDir() + "/asap_swapped_in.png"));

  // Back to the trained operator and scope.
  window_->findChild<QAction*>("useCompiledAsap")->trigger();
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) {
    return r.session.operators.front().family == "sinkhorn";
  }));
  EXPECT_EQ(window_->lastResult()->session.swapScope, SwapScope::None);
  EXPECT_FALSE(window_->lastResult()->swapped.has_value());
}

// A model compiled in layers 0 and 2 only (of the six of sample_checkpoints/sinkhorn): both are swapped in, the
// others keep the trained Sinkhorn, and the status bar, the Model menu and the swap choice say which.
TEST(AsapPartialCompile, SwapsEveryCompiledLayerAndOnlyThose) {
  test::ensureApplication();
  const std::string checkpoint = std::string(TL_SOURCE_DIR) + "/sample_checkpoints/sinkhorn";
  Session session = test::modelSession(checkpoint, 1, 0, SwapScope::None);
  session.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=4,eps=1")};  // the checkpoint's teacher
  MainWindow window(session);
  window.resize(1500, 950);
  window.show();
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) { return r.model != nullptr; }));
  ASSERT_EQ(window.lastResult()->model->config.numLayers, 6);

  const std::string out = test::scratchDir() + "/asap_gui_partial";
  std::filesystem::remove_all(out);
  QSignalSpy finished(&window, &MainWindow::asapCompileFinished);
  AsapCompileOptions options;
  options.calibration = "fashion-mnist:train:0-7";
  options.L = 6;
  options.layers = {0, 2};
  options.out = out;
  window.compileAsap(options, true);
  ASSERT_TRUE(test::waitUntil([&] { return finished.count() == 1; }, std::chrono::seconds(120)));
  ASSERT_TRUE(finished.front().at(0).toBool()) << finished.front().at(2).toString().toStdString();

  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) {
    return r.session.operators.front().family == "asap" && r.swapped.has_value();
  }));
  const SessionResult r = *window.lastResult();
  EXPECT_EQ(r.session.swapScope, SwapScope::Listed);
  EXPECT_EQ(r.swappedLayers, (std::vector<int>{0, 2}));
  EXPECT_EQ(r.session.source.model.layer, 0) << "layer 1 is not compiled: the plan moves to the first compiled one";
  EXPECT_TRUE(window.statusBar()->currentMessage().contains("layers 0, 2")) << window.statusBar()->currentMessage().toStdString();
  EXPECT_TRUE(window.findChild<QAction*>("useCompiledAsap")->text().contains("0, 2"));
  EXPECT_EQ(window.findChild<QComboBox*>("swapScope")->currentText(), "layers 0, 2");

  // The prediction is the core's model with the compiled operator in layers 0 and 2 and the trained Sinkhorn in
  // the others.
  const OperatorSpec spec = OperatorRegistry::builtin().parse(compiledAsapOperator(loadCompiledAsap(out), out));
  const VitRunner runner = VitRunner::open(checkpoint);
  const VitTrace own = runner.run(loadModelImage(r.session.source.model.image, runner.config()).pixels);
  const VecD expected = softmax(runner.rerun(own, 0, {{0, spec}, {2, spec}}).logits);
  auto* prediction = dynamic_cast<PredictionView*>(window.view("prediction"));
  ASSERT_TRUE(prediction->showingSwapped());
  for (int c = 0; c < prediction->classCount(); ++c)
    EXPECT_NEAR(prediction->swappedProbability(c), expected[c], 1e-12) << c;
  // Not what one compiled layer alone gives (the old behaviour swapped only the source's layer).
  const VecD oneLayer = softmax(runner.rerun(own, 0, {{0, spec}}).logits);
  EXPECT_GT((oneLayer - expected).cwiseAbs().maxCoeff(), 1e-9);
  window.grab().save(QString::fromStdString(test::outputDir() + "/asap_partial_swap.png"));

  // Swapping out restores the trained operator and scope.
  window.findChild<QAction*>("useCompiledAsap")->trigger();
  ASSERT_TRUE(test::waitForResult(window, [](const SessionResult& r) {
    return r.session.operators.front().family == "sinkhorn";
  }));
  EXPECT_EQ(window.lastResult()->session.swapScope, SwapScope::None);
  EXPECT_FALSE(window.lastResult()->swapped.has_value());
}

TEST_F(AsapCompileTest, CancelStopsTheCompilationAndWritesNothing) {
  const std::string out = test::scratchDir() + "/asap_gui_cancelled";
  std::filesystem::remove_all(out);
  QSignalSpy finished(window_.get(), &MainWindow::asapCompileFinished);
  AsapCompileOptions options;
  options.calibration = "fashion-mnist:train:0-255";
  options.L = 6;
  options.out = out;
  window_->compileAsap(options, true);
  ASSERT_TRUE(window_->compilingAsap());
  window_->cancelComputation();
  ASSERT_TRUE(test::waitUntil([&] { return finished.count() == 1; }));
  EXPECT_FALSE(finished.front().at(0).toBool());
  EXPECT_FALSE(window_->compilingAsap());
  EXPECT_FALSE(std::filesystem::exists(out + "/asap.json"));
  EXPECT_EQ(window_->lastResult()->session.operators.front().family, "sinkhorn") << "nothing swapped in";
}

TEST(AsapCompileDialog, TheDefaultFolderSitsBesideTheCheckpoint) {
  EXPECT_EQ(AsapCompileDialog::defaultOutput("/data/models/sinkhorn"), "/data/models/sinkhorn-asap");
  EXPECT_EQ(AsapCompileDialog::defaultOutput("/data/models/sinkhorn/"), "/data/models/sinkhorn-asap");
  EXPECT_EQ(AsapCompileDialog::defaultOutput("/data/model.safetensors"), "/data/model-asap");
}

}  // namespace
}  // namespace tl
