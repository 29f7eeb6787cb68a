// Figure and data exports: each file is a complete file of its type with the size the settings ask for,
// written by the one export path that the GUI menu and `tlens render` share.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "io/npy.h"
#include "session/engine.h"
#include "support/figure_file.h"
#include "support/gui_test_support.h"
#include "widgets/shell/figure_export.h"
#include "widgets/shell/session_files.h"
#include "widgets/shell/x_display.h"
#include "widgets/views/convergence_view.h"
#include "widgets/views/plan_heatmap_view.h"

namespace tl {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

class FigureExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
  void SetUp() override { result_ = std::make_shared<const SessionResult>(runSession(test::smallCloudSession(50))); }
  std::shared_ptr<const SessionResult> result_;
  ExportSettings settings_{{"png", "svg", "pdf"}, 600, 450, 1.0};
};

TEST_F(FigureExportTest, HeatmapExportsPngSvgPdf) {
  PlanHeatmapView view;
  view.setResult(result_);
  for (const std::string format : {"png", "svg", "pdf"}) {
    const std::string path = test::outputDir() + "/heatmap." + format;
    view.exportFigure(path, format, settings_);
    EXPECT_TRUE(test::isFigure(test::readBytes(path), format, settings_)) << path;
  }
  // PNG has the requested pixel size times the scale.
  settings_.scale = 2;
  const std::string hiRes = test::outputDir() + "/heatmap@2x.png";
  view.exportFigure(hiRes, "png", settings_);
  const QImage image(QString::fromStdString(hiRes));
  EXPECT_EQ(image.size(), QSize(1200, 900));
  EXPECT_GT(test::distinctColors(image), 50);
}

TEST_F(FigureExportTest, ConvergenceExportsPngSvgPdf) {
  ConvergenceView view;
  view.setResult(result_);
  for (const std::string format : {"png", "svg", "pdf"}) {
    const std::string path = test::outputDir() + "/convergence." + format;
    view.exportFigure(path, format, settings_);
    EXPECT_TRUE(test::isFigure(test::readBytes(path), format, settings_)) << path;
  }
}

// Exports render into memory before they write (atomically), so a failed export throws and leaves the file
// an earlier export wrote byte for byte.
TEST_F(FigureExportTest, FailedExportLeavesEarlierFileAndThrows) {
  PlanHeatmapView view;
  view.setResult(result_);
  const std::string earlier = test::outputDir() + "/earlier-plan.png";
  view.exportFigure(earlier, "png", settings_);
  const std::string before = test::readBytes(earlier);
  ASSERT_TRUE(test::isFigure(before, "png", settings_));
  EXPECT_THROW(view.exportFigure(earlier, "tiff", settings_), InvalidArgument);
  EXPECT_TRUE(test::readBytes(earlier) == before) << "the failed export changed " << earlier;
  EXPECT_THROW(view.exportFigure(test::outputDir() + "/no-such-dir/plan.png", "png", settings_), FileError);
}

TEST_F(FigureExportTest, RenderFiguresWritesEveryViewAndFormat) {
  Session session = test::smallCloudSession(50);
  session.exportSettings = settings_;
  const SessionResult result = runSession(session);
  const std::string dir = test::outputDir() + "/render";
  const RenderReport report = renderFigures(result, dir);
  for (const std::string view : {"plan", "convergence"})
    for (const std::string format : {"png", "svg", "pdf"}) {
      const std::string path = dir + "/" + view + "." + format;
      EXPECT_TRUE(contains(report.written, path)) << path;
      EXPECT_TRUE(test::isFigure(test::readBytes(path), format, settings_)) << path;
    }
  EXPECT_TRUE(contains(report.skipped, "cloud3d.svg: the cloud3d view does not export svg"));
  ASSERT_TRUE(haveXDisplay()) << "GUI tests run under xvfb-run";
  for (const std::string format : {"png", "pdf"}) {
    const std::string path = dir + "/cloud3d." + format;
    EXPECT_TRUE(contains(report.written, path)) << path;
    EXPECT_TRUE(test::isFigure(test::readBytes(path), format, settings_)) << path;
  }
  const QImage cloud(QString::fromStdString(dir + "/cloud3d.png"));
  EXPECT_EQ(cloud.size(), QSize(600, 450));
  EXPECT_GT(test::distinctColors(cloud), 50);  // points and lines, not an empty background
}

TEST_F(FigureExportTest, RenderFiguresSkipsThe3DViewForNonPointClouds) {
  Session session = test::gaussianSession(30);
  session.exportSettings = settings_;
  const RenderReport report = renderFigures(runSession(session), test::outputDir() + "/render-gaussian");
  EXPECT_TRUE(contains(report.skipped, "cloud3d: the source is not a point cloud"));
  EXPECT_EQ(report.written.size(), 6u);
}

TEST_F(FigureExportTest, PlanExportsAsNpyAndCsv) {
  const MatD& plan = result_->runs.front().result.plan.dense();
  const std::string npy = test::outputDir() + "/plan.npy", csv = test::outputDir() + "/plan.csv";
  exportPlan(plan, npy);
  exportPlan(plan, csv);
  EXPECT_EQ(readNpyMatrix<double>(npy), plan);
  const std::string text = test::readBytes(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), plan.rows());
  EXPECT_THROW(exportPlan(plan, test::outputDir() + "/plan.txt"), InvalidArgument);
}

}  // namespace
}  // namespace tl
