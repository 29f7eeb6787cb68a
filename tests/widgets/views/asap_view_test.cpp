// The ASAP / sliced potentials view in the main window: the scatter it draws is the core fit's (R² recomputed
// from the drawn points equals inspectAsap's), moving the slice-count slider refits off the GUI thread to the
// core's value for the new L, another primary operator gets a message, and `tlens render`'s path
// (renderFigures) exports the figure and the dual table.
#include <QComboBox>
#include <QDockWidget>
#include <QSlider>
#include <QScrollArea>
#include <QScrollBar>
#include <QCoreApplication>
#include <algorithm>
#include <sstream>
#include <gtest/gtest.h>

#include "session/engine.h"
#include "support/figure_file.h"
#include "support/gui_test_support.h"
#include "widgets/panels/operator_form.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/shell/figure_export.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/asap_view.h"

namespace tl {
namespace {

Session asapSession() {
  Session s = test::gaussianSession(40);
  s.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=4,eps=0.5")};
  return s;
}

class AsapViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void SetUp() override {
    window_ = std::make_unique<MainWindow>(asapSession());
    window_->resize(1500, 950);
    window_->show();
    view_ = dynamic_cast<AsapView*>(window_->view("asap"));
    ASSERT_NE(view_, nullptr);
    ASSERT_TRUE(test::waitUntil([&] { return window_->lastResult() != nullptr; }));
    // A hidden tab does not fit; raising it does.
    EXPECT_EQ(view_->inspection(), nullptr);
    window_->findChild<QDockWidget*>("asapDock")->raise();
    ASSERT_TRUE(test::waitUntil([&] { return window_->lastResult() && view_->inspection(); }));
  }

  // The core's fit for this input at L slices, with the view's other settings.
  AsapInspection coreFit(int L) const {
    AsapInspectionSettings s = view_->inspection()->settings;
    s.L = L;
    return inspectAsap(*window_->lastResult()->input, s);
  }

  std::unique_ptr<MainWindow> window_;
  AsapView* view_ = nullptr;
};

TEST_F(AsapViewTest, SliceCountSliderRefitsToTheCoresR2) {
  ASSERT_TRUE(view_->showingContent()) << view_->message().toStdString();
  EXPECT_EQ(view_->inspection()->settings.teacher.T, 4);
  EXPECT_EQ(view_->inspection()->settings.teacher.eps, 0.5);
  EXPECT_EQ(view_->scatterPoints(), 40);
  const int before = view_->inspection()->settings.L;
  const double r2Before = view_->scatterR2();
  EXPECT_NEAR(r2Before, coreFit(before).quality.r2, 1e-12);

  auto* slider = view_->findChild<QSlider*>("asapSlices");
  ASSERT_NE(slider, nullptr);
  slider->setValue(2);
  ASSERT_TRUE(test::waitUntil([&] { return view_->inspection()->settings.L == 2; }));
  const double r2After = view_->scatterR2();
  EXPECT_GT(std::abs(r2After - r2Before), 1e-3) << "R² did not change with the slice count";
  EXPECT_NEAR(r2After, coreFit(2).quality.r2, 1e-12);
  EXPECT_EQ(view_->featureMap().columns(), 2);
  // The session remembers the slider.
  EXPECT_EQ(window_->currentSession().viewState.at("asap").at("slices"), 2);
}

// The T_b baseline map and the trajectory panel draw the core's numbers; the T_b box switches the baseline.
[[nodiscard]] bool drawsMatrix(const MatrixMap& map, const MatD& m) {
  if (map.rows() != m.rows() || map.columns() != m.cols()) return false;
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j)
      if (map.cell(i, j) != m(i, j)) return false;
  return true;
}

TEST_F(AsapViewTest, ShortBudgetPlanAndWarmStartTrajectoryAreTheCores) {
  ASSERT_TRUE(view_->showingContent());
  const AsapInspection& fit = *view_->inspection();
  EXPECT_EQ(view_->shortBudget(), 3);
  EXPECT_TRUE(drawsMatrix(view_->shortBudgetMap(), fit.shortPlans[1]));
  auto* box = view_->findChild<QComboBox*>("asapShortBudget");
  box->setCurrentIndex(box->findData(1));
  EXPECT_TRUE(drawsMatrix(view_->shortBudgetMap(), fit.shortPlans[0]));
  for (bool warm : {false, true}) {
    const auto drawn = view_->trajectory(warm);
    const std::vector<double>& core = warm ? fit.warmStartErrors : fit.coldStartErrors;
    ASSERT_EQ(drawn.size(), core.size()) << warm;
    for (size_t t = 0; t < core.size(); ++t) {
      EXPECT_EQ(drawn[t].first, double(t + 1));
      EXPECT_EQ(drawn[t].second, std::max(core[t], 1e-16)) << warm << " " << t;
    }
  }
  view_->grab().save(QString::fromStdString(test::outputDir() + "/asap_view_panels.png"));
}

// The marginal panels draw the core's row and column sums of every plan, and ASAP's row band is 1 ± η of the
// core's B.34 bound; the T_b box switches the baseline's sums too.
TEST_F(AsapViewTest, MarginalPanelsDrawTheCoresSumsAndRowBound) {
  ASSERT_TRUE(view_->showingContent());
  const AsapInspection& fit = *view_->inspection();
  using Plan = AsapView::MarginalPlan;
  const auto expectSums = [&](Plan plan, const MatD& A) {
    const PlanMarginals sums = planMarginals(A);
    for (bool rows : {true, false}) {
      const std::vector<double> drawn = view_->drawnMarginals(rows, plan);
      const VecD& core = rows ? sums.rows : sums.cols;
      ASSERT_EQ(drawn.size(), size_t(core.size()));
      for (size_t i = 0; i < drawn.size(); ++i) EXPECT_EQ(drawn[i], core(Eigen::Index(i))) << int(plan) << ' ' << i;
    }
  };
  expectSums(Plan::Teacher, fit.teacherPlan);
  expectSums(Plan::Asap, fit.asapPlan);
  expectSums(Plan::Asap0, fit.asap0Plan);
  expectSums(Plan::ShortBudget, fit.shortPlans[1]);  // T_b = 3 by default
  ASSERT_TRUE(fit.rowBound.has_value());
  EXPECT_EQ(view_->drawnRowBand(), (std::vector<double>{1 - fit.rowBound->eta, 1 + fit.rowBound->eta}));
  for (double sum : view_->drawnMarginals(true, Plan::Asap)) EXPECT_LE(std::abs(sum - 1), fit.rowBound->eta + 1e-12);

  view_->findChild<QComboBox*>("asapShortBudget")->setCurrentIndex(0);  // T_b = 1
  expectSums(Plan::ShortBudget, fit.shortPlans[0]);
}

// The sweep panels draw the core's slice sweep: R², both KLs and the three bounds at every L.
TEST_F(AsapViewTest, SweepPanelsDrawTheCoresKlDiagnostics) {
  ASSERT_TRUE(view_->showingContent());
  ASSERT_TRUE(test::waitUntil([&] { return view_->sweep() != nullptr; }));
  const SliceSweep& sweep = *view_->sweep();
  ASSERT_FALSE(sweep.slices.empty());
  using Curve = AsapView::SweepCurve;
  for (Curve curve : {Curve::R2, Curve::ForwardKl, Curve::ReverseKl, Curve::VarianceBound, Curve::KappaBound,
                      Curve::LsSurrogate}) {
    const auto drawn = view_->drawnSweep(curve);
    ASSERT_EQ(drawn.size(), sweep.slices.size()) << int(curve);
    for (size_t k = 0; k < drawn.size(); ++k) {
      const OneSidedKl& kl = sweep.kl[k];
      const double core = curve == Curve::R2              ? sweep.r2[k]
                          : curve == Curve::ForwardKl     ? kl.forward
                          : curve == Curve::ReverseKl     ? kl.reverse
                          : curve == Curve::VarianceBound ? kl.varianceBound
                          : curve == Curve::KappaBound    ? kl.kappaBound
                                                          : sweep.lsSurrogate[k];
      EXPECT_EQ(drawn[k].first, double(sweep.slices[k]));
      EXPECT_EQ(drawn[k].second, core) << int(curve) << " at L = " << sweep.slices[k];
    }
  }
  // The sweep is the same refit the core makes for this input.
  const SliceSweep core = sweepSlices(*window_->lastResult()->input, view_->inspection()->settings);
  ASSERT_EQ(core.slices, sweep.slices);
  for (size_t k = 0; k < sweep.slices.size(); ++k) EXPECT_EQ(core.kl[k].forward, sweep.kl[k].forward);
  window_->grab().save(QString::fromStdString(test::outputDir() + "/asap_view_window.png"));
  for (QScrollArea* a : view_->findChildren<QScrollArea*>()) a->verticalScrollBar()->setValue(a->verticalScrollBar()->maximum());
  QCoreApplication::processEvents();
  window_->grab().save(QString::fromStdString(test::outputDir() + "/asap_view_window_bottom.png"));
}

TEST_F(AsapViewTest, OtherPrimaryOperatorGetsAMessage) {
  QComboBox* picker = window_->operatorPanel()->primaryForm()->familyPicker();
  picker->setCurrentIndex(picker->findData(QString("softmax")));
  ASSERT_TRUE(test::waitUntil([&] { return !view_->showingContent(); }));
  EXPECT_TRUE(view_->message().contains("Sinkhorn")) << view_->message().toStdString();
  EXPECT_FALSE(view_->exportUnavailableReason().empty());
}

TEST(AsapViewRender, RenderWritesTheFigureAndTheDualTable) {
  test::ensureApplication();
  Session session = asapSession();
  session.views = {"asap"};
  session.viewState["asap"] = {{"slices", 6}};
  session.exportSettings.formats = {"png", "svg", "pdf", "csv"};
  session.exportSettings.width = 1200;
  session.exportSettings.height = 700;
  session.exportSettings.scale = 1;
  const SessionResult result = runSession(session);
  const std::string dir = test::outputDir() + "/render-asap";
  const RenderReport report = renderFigures(result, dir);
  ASSERT_EQ(report.written.size(), 4u) << (report.skipped.empty() ? "" : report.skipped.front());
  for (const std::string format : {"png", "svg", "pdf"})
    EXPECT_TRUE(test::isFigure(test::readBytes(dir + "/asap." + format), format, session.exportSettings)) << format;
  const std::string csv = test::readBytes(dir + "/asap.csv");
  // Duals (header + 40 tokens), marginals (blank, header + 40), sweep (blank, header + L = 1, 2, 4, 6, … 128).
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2 + 40 + 3 + 40 + 3 + 9);
  AsapInspectionSettings s;
  s.teacher.T = 4;
  s.teacher.eps = 0.5;
  s.L = 6;
  const AsapInspection core = inspectAsap(*result.input, s);
  std::ostringstream r2;
  r2.precision(17);
  r2 << "r2=" << core.quality.r2;
  EXPECT_NE(csv.find(r2.str()), std::string::npos) << csv.substr(0, 200);
  // The sweep's row at the view's L carries the core's numbers.
  const SliceSweep sweep = sweepSlices(*result.input, s);
  std::ostringstream row;
  row.precision(17);
  row << "\n6," << sweep.r2[3] << ',' << sweep.residualMeanSquare[3] << ',' << sweep.kl[3].forward << ',';
  EXPECT_EQ(sweep.slices[3], 6);
  EXPECT_NE(csv.find(row.str()), std::string::npos) << csv.substr(csv.rfind("# slice sweep"));
}

}  // namespace
}  // namespace tl
