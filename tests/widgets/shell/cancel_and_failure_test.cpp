// Long work started from the window can be cancelled (the Cancel button beside the progress, or Esc), and a
// cancel or a failure leaves the window responsive with the last good result on screen.
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTest>
#include <gtest/gtest.h>

#include "support/gui_test_support.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/plan_heatmap_view.h"

namespace tl {
namespace {

int queriesShown(const MainWindow& window) {
  const auto r = window.lastResult();
  return r && r->input ? r->input->nQueries() : -1;
}

// Sinkhorn with a budget it cannot finish in the test's lifetime (n = 1500, T = 100000): only a cancel ends it.
Session endlessSession() {
  Session s = test::gaussianSession(1500);
  s.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=100000")};
  return s;
}

class CancelAndFailureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void SetUp() override {
    window_ = std::make_unique<MainWindow>(test::gaussianSession(40));
    window_->show();
    ASSERT_TRUE(test::waitUntil([&] { return queriesShown(*window_) == 40; }));
    good_ = window_->lastResult();
    busy_ = window_->findChild<QLabel*>("statusBusy");
    cancel_ = window_->findChild<QPushButton*>("cancelComputation");
    ASSERT_NE(busy_, nullptr);
    ASSERT_NE(cancel_, nullptr);
    EXPECT_TRUE(cancel_->isHidden()) << "nothing runs, nothing to cancel";
    QObject::connect(window_.get(), &MainWindow::resultShown, [this](std::shared_ptr<const SessionResult> r) {
      shownQueries_.push_back(r->input ? r->input->nQueries() : -1);
    });
  }

  // Starts the endless computation and waits until its progress shows, so the cancel lands in the running loop.
  void startEndlessComputation() {
    window_->loadSession(endlessSession());
    ASSERT_TRUE(test::waitUntil([&] { return busy_->text().contains('%'); }));
    EXPECT_FALSE(cancel_->isHidden());
  }

  // After a cancel: the last good result stays, and the next edit computes and reaches the screen.
  void expectLastResultKeptAndWindowResponsive() {
    EXPECT_TRUE(cancel_->isHidden());
    EXPECT_TRUE(busy_->text().startsWith("cancelled")) << busy_->text().toStdString();
    EXPECT_EQ(window_->lastResult(), good_);
    window_->loadSession(test::gaussianSession(50));
    ASSERT_TRUE(test::waitUntil([&] { return queriesShown(*window_) == 50; }));
    EXPECT_TRUE(busy_->text().isEmpty());
    EXPECT_TRUE(cancel_->isHidden());
    for (int n : shownQueries_) EXPECT_NE(n, 1500) << "the cancelled computation never reaches the screen";
  }

  std::unique_ptr<MainWindow> window_;
  std::shared_ptr<const SessionResult> good_;
  QLabel* busy_ = nullptr;
  QPushButton* cancel_ = nullptr;
  std::vector<int> shownQueries_;
};

TEST_F(CancelAndFailureTest, CancelButtonStopsALongComputationAndKeepsTheLastResult) {
  startEndlessComputation();
  QTest::mouseClick(cancel_, Qt::LeftButton);
  expectLastResultKeptAndWindowResponsive();
}

TEST_F(CancelAndFailureTest, EscapeCancelsLikeTheButton) {
  window_->activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(window_.get()));
  startEndlessComputation();
  QTest::keyClick(window_.get(), Qt::Key_Escape);
  expectLastResultKeptAndWindowResponsive();
}

TEST_F(CancelAndFailureTest, AFailedComputationKeepsTheLastResultOnScreenAndTheNextEditComputes) {
  QSignalSpy failed(window_.get(), &MainWindow::computationFailed);
  Session broken = test::gaussianSession(40);
  broken.source = SourceSpec::parse("files:q=/nonexistent/q.npy,k=/nonexistent/k.npy");
  window_->loadSession(broken);
  ASSERT_TRUE(test::waitUntil([&] { return failed.count() == 1; }));
  EXPECT_NE(failed.front().front().toString().indexOf("q.npy"), -1) << "the message names the file";
  EXPECT_NE(window_->statusBar()->currentMessage().indexOf("q.npy"), -1);
  EXPECT_EQ(window_->lastResult(), good_);
  auto* heatmap = dynamic_cast<PlanHeatmapView*>(window_->view("plan"));
  ASSERT_NE(heatmap, nullptr);
  EXPECT_EQ(heatmap->queries(), 40) << "the heatmap still draws the last good plan";
  EXPECT_TRUE(busy_->text().isEmpty());
  EXPECT_TRUE(cancel_->isHidden());

  window_->loadSession(test::gaussianSession(50));
  ASSERT_TRUE(test::waitUntil([&] { return queriesShown(*window_) == 50; }));
  EXPECT_EQ(heatmap->queries(), 50);
}

}  // namespace
}  // namespace tl
