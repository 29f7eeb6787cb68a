// The plan views' colour scales follow the sign of the map: a transport plan (entries ≥ 0) is coloured from 0 to
// its largest entry, a diff map (softmax − λ·softmax, entries of both signs) on a scale symmetric about 0, on which
// a log scale has no place.
#include <QCheckBox>
#include <gtest/gtest.h>

#include "ops/registry.h"
#include "support/gui_test_support.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/compare_view.h"
#include "widgets/views/plan_heatmap_view.h"

namespace tl {
namespace {

class SignedPlanViewsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

TEST_F(SignedPlanViewsTest, NegativeEntriesGetAScaleSymmetricAboutZero) {
  Session session = test::gaussianSession(48);
  session.operators = {OperatorRegistry::builtin().parse("diff:lambda=0.8")};
  MainWindow window(session);
  window.show();
  ASSERT_TRUE(test::waitUntil([&] {
    auto r = window.lastResult();
    return r && r->session.operators.front().family == "diff";
  }));
  auto* heatmap = dynamic_cast<PlanHeatmapView*>(window.view("plan"));
  ASSERT_NE(heatmap, nullptr);
  auto* logToggle = heatmap->findChild<QCheckBox*>("logColor");
  ASSERT_NE(logToggle, nullptr);
  const MatD& A = window.lastResult()->runs.front().result.plan.dense();
  ASSERT_LT(A.minCoeff(), 0) << "a diff map with lambda = 0.8 has negative entries";
  const double largest = A.cwiseAbs().maxCoeff();
  EXPECT_EQ(heatmap->colourRange(), std::make_pair(-largest, largest));
  EXPECT_EQ(heatmap->cellValue(0, 0), A(0, 0)) << "entries are drawn as they are, not clipped at 0";
  // A log scale cannot show them: its toggle rests, and choosing it keeps the signed scale.
  EXPECT_FALSE(logToggle->isEnabled());
  heatmap->setLogColor(true);
  EXPECT_EQ(heatmap->colourRange(), std::make_pair(-largest, largest));

  // Back to a transport plan: the toggle works again and the scale starts at 0.
  session.operators = {OperatorRegistry::builtin().parse("softmax")};
  window.loadSession(session);
  ASSERT_TRUE(test::waitUntil([&] {
    auto r = window.lastResult();
    return r && r->session.operators.front().family == "softmax";
  }));
  EXPECT_TRUE(logToggle->isEnabled());
  heatmap->setLogColor(false);
  const MatD& P = window.lastResult()->runs.front().result.plan.dense();
  EXPECT_EQ(heatmap->colourRange(), std::make_pair(0.0, P.maxCoeff()));
}

TEST_F(SignedPlanViewsTest, CompareModeDrawsBothPlansOnOneScaleSymmetricAboutZero) {
  Session session = test::gaussianSession(40);
  session.operators = {OperatorRegistry::builtin().parse("diff:lambda=0.8"),
                       OperatorRegistry::builtin().parse("softmax")};
  MainWindow window(session);
  window.show();
  ASSERT_TRUE(test::waitUntil([&] {
    auto r = window.lastResult();
    return r && r->runs.size() == 2 && r->runs.front().spec.family == "diff";
  }));
  auto* compare = dynamic_cast<CompareView*>(window.view("compare"));
  ASSERT_NE(compare, nullptr);
  ASSERT_TRUE(compare->showingContent()) << compare->message().toStdString();
  const MatD& A1 = window.lastResult()->runs[0].result.plan.dense();
  const MatD& A2 = window.lastResult()->runs[1].result.plan.dense();
  const double largest = std::max(A1.cwiseAbs().maxCoeff(), A2.maxCoeff());
  for (int k : {0, 1}) {
    const QCPRange range = compare->plan(k).map->dataRange();
    EXPECT_EQ(range.lower, -largest) << "plan " << k + 1;
    EXPECT_EQ(range.upper, largest) << "plan " << k + 1;
  }
}

}  // namespace
}  // namespace tl
