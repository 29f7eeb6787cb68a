// The convergence view plots the operator's own marginal errors after every step, on a log axis.
#include <QCheckBox>
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "session/engine.h"
#include "support/gui_test_support.h"
#include "widgets/views/convergence_view.h"

namespace tl {
namespace {

class ConvergenceViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

// The bold curve is max(row max, col max) per step; "per side" adds the row and column maxima as dots.
TEST_F(ConvergenceViewTest, PlotsTheErrorHistoryOfTheCoreResult) {
  const auto result = std::make_shared<const SessionResult>(runSession(test::smallCloudSession(40)));
  const auto& history = result->runs.front().result.errorHistory;
  ASSERT_GT(history.size(), 2u);
  ConvergenceView view;
  view.setResult(result);
  QCustomPlot* plot = view.plot();
  EXPECT_EQ(plot->yAxis->scaleType(), QCPAxis::stLogarithmic);
  ASSERT_EQ(plot->graphCount(), 1);
  const auto* worst = plot->graph(0)->data().data();
  ASSERT_EQ(worst->size(), int(history.size()));
  for (int s = 0; s < int(history.size()); ++s) {
    const double expected = std::max({history[size_t(s)].rowMax, history[size_t(s)].colMax, 1e-17});
    EXPECT_DOUBLE_EQ(worst->at(s)->key, s + 1);
    EXPECT_DOUBLE_EQ(worst->at(s)->value, expected) << "step " << s + 1;
  }
  view.findChild<QCheckBox*>("perSide")->setChecked(true);
  ASSERT_EQ(plot->graphCount(), 3);
  EXPECT_EQ(plot->graph(1)->lineStyle(), QCPGraph::lsNone);
  EXPECT_DOUBLE_EQ(plot->graph(2)->data()->at(1)->value, std::max(history[1].colMax, 1e-17));
  EXPECT_EQ(view.saveState().at("perSide"), true);
}

}  // namespace
}  // namespace tl
