// The [CLS] map and prediction views in the main window on a checkpoint (tests/fixtures/vit/hf_softmax: 2×2
// patch grid, 2 layers, 2 heads): what they draw equals core/analysis/cls_maps.h and a softmax of the logits
// on the result's traces, and follows the source panel (layer, head, swap scope), the view's own controls
// (map kind, head fusion, original/swapped/difference) and the operator panel.
#include <QComboBox>
#include <QSpinBox>
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/cls_maps.h"
#include "support/gui_test_support.h"
#include "support/model_gui_test_support.h"
#include "widgets/panels/operator_form.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/panels/source_panel.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/cls_map_view.h"
#include "widgets/views/prediction_view.h"

namespace tl {
namespace {

[[nodiscard]] double maxDifference(const MatD& a, const MatD& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  return a.size() ? (a - b).cwiseAbs().maxCoeff() : 0.0;
}

VecD softmax(const VecD& logits) {
  const VecD e = (logits.array() - logits.maxCoeff()).exp();
  return e / e.sum();
}

PatchGrid gridOf(const SessionResult& r) { return {r.model->config.gridSize(), r.model->config.gridSize()}; }
const MatD& attention(const VitTrace& trace, int layer, int head) {
  return trace.layers[size_t(layer)].heads[size_t(head)].attention;
}

class ModelViewsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void SetUp() override {
    window_ = std::make_unique<MainWindow>(test::modelSession(test::fixtureCheckpoint("hf_softmax")));
    window_->resize(1500, 950);
    window_->show();
    ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.model != nullptr; }));
    cls_ = dynamic_cast<ClsMapView*>(window_->view("cls"));
    prediction_ = dynamic_cast<PredictionView*>(window_->view("prediction"));
    ASSERT_NE(cls_, nullptr);
    ASSERT_NE(prediction_, nullptr);
  }

  SessionResult last() const { return *window_->lastResult(); }
  template <class T>
  T* find(const char* name) const {
    T* widget = window_->findChild<T*>(name);
    EXPECT_NE(widget, nullptr) << name;
    return widget;
  }
  void pick(QComboBox* box, const char* data) const {
    const int index = box->findData(QString(data));
    ASSERT_GE(index, 0) << data;
    box->setCurrentIndex(index);
  }

  std::unique_ptr<MainWindow> window_;
  ClsMapView* cls_ = nullptr;
  PredictionView* prediction_ = nullptr;
};

TEST_F(ModelViewsTest, ClsMapsAreTheQueryRowsOfTheSourceLayer) {
  const SessionResult r = last();
  ASSERT_TRUE(cls_->showingContent()) << cls_->message().toStdString();
  ASSERT_EQ(cls_->panelCount(), 2);  // one per head
  for (int h = 0; h < 2; ++h)
    EXPECT_EQ(maxDifference(cls_->panelValues(h), clsQueryMap(attention(r.model->trace, 0, h), gridOf(r))), 0.0) << h;
  EXPECT_EQ(maxDifference(cls_->largeValues(), clsQueryMap(attention(r.model->trace, 0, 0), gridOf(r))), 0.0);
  // The image under the maps is the one the model ran on (8×8, its three channels averaged).
  const MatD image = cls_->imageValues();
  ASSERT_EQ(image.rows(), 8);
  ASSERT_EQ(image.cols(), 8);
  const HostTensor& pixels = r.model->image.pixels;
  EXPECT_NEAR(image(3, 5), (pixels.values[3 * 8 + 5] + pixels.values[64 + 3 * 8 + 5] + pixels.values[128 + 3 * 8 + 5]) / 3.0,
              1e-7);
  EXPECT_TRUE(cls_->heading().contains("layer 0")) << cls_->heading().toStdString();
  EXPECT_TRUE(cls_->heading().contains("Softmax")) << cls_->heading().toStdString();
  // One colour range over both heads.
  EXPECT_EQ(cls_->colourRange().lower, std::min(cls_->panelValues(0).minCoeff(), cls_->panelValues(1).minCoeff()));
  EXPECT_EQ(cls_->colourRange().upper, std::max(cls_->panelValues(0).maxCoeff(), cls_->panelValues(1).maxCoeff()));
}

TEST_F(ModelViewsTest, LayerAndHeadFromTheSourcePanelRedrawTheMaps) {
  find<QSpinBox>("modelLayer")->setValue(1);
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.session.source.model.layer == 1; }));
  find<QSpinBox>("modelHead")->setValue(1);
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.session.source.model.head == 1; }));
  const SessionResult r = last();
  EXPECT_EQ(maxDifference(cls_->largeValues(), clsQueryMap(attention(r.model->trace, 1, 1), gridOf(r))), 0.0);
  EXPECT_EQ(maxDifference(cls_->panelValues(0), clsQueryMap(attention(r.model->trace, 1, 0), gridOf(r))), 0.0);
  // The operator runs on the same head: the plan view's input is that head's Q and K.
  EXPECT_EQ(maxDifference(r.input->Q, r.model->trace.layers[1].heads[1].input.Q), 0.0);
}

TEST_F(ModelViewsTest, KeyColumnAndRolloutWithEachHeadFusion) {
  const SessionResult r = last();
  pick(find<QComboBox>("clsKind"), "key");
  EXPECT_EQ(maxDifference(cls_->largeValues(), clsKeyMap(attention(r.model->trace, 0, 0), gridOf(r))), 0.0);
  EXPECT_EQ(maxDifference(cls_->panelValues(1), clsKeyMap(attention(r.model->trace, 0, 1), gridOf(r))), 0.0);

  pick(find<QComboBox>("clsKind"), "rollout");
  EXPECT_TRUE(find<QComboBox>("clsFusion")->isEnabled());
  ASSERT_EQ(cls_->panelCount(), 2);  // rollout through layer 0, through layer 1
  for (HeadFusion fusion : {HeadFusion::Mean, HeadFusion::Max, HeadFusion::Min}) {
    pick(find<QComboBox>("clsFusion"), headFusionName(fusion));
    std::vector<std::vector<MatD>> layers;
    for (int l = 0; l < 2; ++l) {
      layers.push_back({attention(r.model->trace, l, 0), attention(r.model->trace, l, 1)});
      EXPECT_EQ(maxDifference(cls_->panelValues(l), clsQueryMap(attentionRollout(layers, fusion, 0.5), gridOf(r))), 0.0)
          << headFusionName(fusion) << " through layer " << l;
    }
    // The large map is the rollout through the source's layer (0).
    EXPECT_EQ(maxDifference(cls_->largeValues(), cls_->panelValues(0)), 0.0);
  }
  EXPECT_EQ(window_->currentSession().viewState.at("cls").at("kind"), "rollout");
  EXPECT_EQ(window_->currentSession().viewState.at("cls").at("fusion"), "min");
}

TEST_F(ModelViewsTest, SwappedOperatorChangesTheMapsAndThePrediction) {
  // Scope none: nothing swapped in; "difference" falls back to the original and says why.
  const SessionResult before = last();
  EXPECT_FALSE(before.swapped);
  EXPECT_FALSE(prediction_->showingSwapped());
  pick(find<QComboBox>("clsTrace"), "difference");
  EXPECT_EQ(cls_->drawnTrace(), ClsTrace::Original);
  EXPECT_TRUE(cls_->heading().contains("swap scope is none")) << cls_->heading().toStdString();

  // Sinkhorn at layer 1 (the source's layer): the swapped run differs there.
  find<QSpinBox>("modelLayer")->setValue(1);
  pick(find<QComboBox>("swapScope"), "layer");
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) {
    return r.session.source.model.layer == 1 && r.swapped.has_value();
  }));
  const SessionResult r = last();
  EXPECT_EQ(r.swappedLayers, std::vector<int>{1});
  EXPECT_EQ(r.session.operators.front().family, "sinkhorn");
  const MatD original = clsQueryMap(attention(r.model->trace, 1, 0), gridOf(r));
  const MatD swapped = clsQueryMap(attention(*r.swapped, 1, 0), gridOf(r));
  ASSERT_GT(maxDifference(original, swapped), 1e-6);
  ASSERT_EQ(cls_->drawnTrace(), ClsTrace::Difference);
  EXPECT_EQ(maxDifference(cls_->largeValues(), swapped - original), 0.0);
  EXPECT_EQ(cls_->colourRange().lower, -cls_->colourRange().upper);  // diverging, symmetric about 0
  pick(find<QComboBox>("clsTrace"), "swapped");
  EXPECT_EQ(maxDifference(cls_->largeValues(), swapped), 0.0);
  EXPECT_TRUE(cls_->heading().contains("Sinkhorn")) << cls_->heading().toStdString();
  pick(find<QComboBox>("clsTrace"), "original");
  EXPECT_EQ(maxDifference(cls_->largeValues(), original), 0.0);

  // The prediction: softmax of both runs' logits, side by side.
  ASSERT_TRUE(prediction_->showingSwapped());
  ASSERT_EQ(prediction_->classCount(), 3);
  // The image is a Fashion-MNIST T-shirt; this model's classes are cat, dog, bird: nothing is marked true.
  EXPECT_EQ(prediction_->markedTrueClass(), -1);
  const VecD p = softmax(r.model->trace.logits), q = softmax(r.swapped->logits);
  double moved = 0;
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(prediction_->probability(k), p[k], 1e-15) << k;
    EXPECT_NEAR(prediction_->swappedProbability(k), q[k], 1e-15) << k;
    moved = std::max(moved, std::abs(p[k] - q[k]));
  }
  EXPECT_GT(moved, 1e-9);
  EXPECT_TRUE(prediction_->heading().contains("with Sinkhorn at layer 1")) << prediction_->heading().toStdString();

  // Another operator in the operator panel: the swapped run follows it.
  QComboBox* family = window_->operatorPanel()->primaryForm()->familyPicker();
  family->setCurrentIndex(family->findData(QString("softmax")));
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& s) {
    return s.session.operators.front().family == "softmax" && s.swapped.has_value();
  }));
  const SessionResult s = last();
  pick(find<QComboBox>("clsTrace"), "swapped");
  EXPECT_EQ(maxDifference(cls_->largeValues(), clsQueryMap(attention(*s.swapped, 1, 0), gridOf(s))), 0.0);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(prediction_->swappedProbability(k), softmax(s.swapped->logits)[k], 1e-15);
  EXPECT_TRUE(prediction_->heading().contains("with Softmax at layer 1")) << prediction_->heading().toStdString();
}

TEST_F(ModelViewsTest, SwapScopesReachTheSession) {
  const struct {
    const char* scope;
    std::vector<int> layers;
  } cases[] = {{"from-layer", {0, 1}}, {"all-layers", {0, 1}}, {"layer", {0}}};
  for (const auto& c : cases) {
    pick(find<QComboBox>("swapScope"), c.scope);
    ASSERT_TRUE(test::waitForResult(*window_, [&](const SessionResult& r) {
      return swapScopeName(r.session.swapScope) == std::string(c.scope);
    })) << c.scope;
    EXPECT_EQ(last().swappedLayers, c.layers) << c.scope;
    EXPECT_EQ(window_->currentSession().swapScope, parseSwapScope(c.scope));
  }
  EXPECT_TRUE(prediction_->heading().contains("layer 0")) << prediction_->heading().toStdString();
}

TEST_F(ModelViewsTest, ASyntheticSourceGetsAPlainMessage) {
  EXPECT_TRUE(cls_->showingContent());
  QComboBox* kind = find<QComboBox>("sourceKind");
  kind->setCurrentIndex(kind->findData(QString("gaussian")));
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.model == nullptr; }));
  EXPECT_FALSE(cls_->showingContent());
  EXPECT_TRUE(cls_->message().contains("not a model")) << cls_->message().toStdString();
  EXPECT_FALSE(prediction_->showingContent());
  EXPECT_NE(cls_->exportUnavailableReason(), "");
  // Back to the checkpoint the page still names.
  kind->setCurrentIndex(kind->findData(QString("model")));
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.model != nullptr; }));
  EXPECT_TRUE(cls_->showingContent());
}

}  // namespace
}  // namespace tl
