// The Rank decay view draws the curves the Engine computed (core/rankdecay) for every configuration of the
// session; toggling a configuration redraws from them, and what is drawn equals the core's numbers.
#include <QCheckBox>
#include <QDir>
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "io/atomic_file.h"
#include "session/engine.h"
#include "support/gui_test_support.h"
#include "widgets/shell/figure_export.h"
#include "widgets/views/rank_decay_view.h"

namespace tl {
namespace {

using rankdecay::BlockConfig;

class RankDecayViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  static Session rankDecaySession() {
    Session session = test::gaussianSession(8);
    session.operators = {OperatorRegistry::builtin().parse("softmax"), OperatorRegistry::builtin().parse("sinkhorn:T=50")};
    session.views = {"rank_decay"};
    session.rankDecay.source = "stack:n=12,d=16,H=2,L=4";
    session.rankDecay.seeds = 3;
    session.rankDecay.paths = 10;
    session.rankDecay.configs = {BlockConfig::San, BlockConfig::SanSkip, BlockConfig::SanFfn, BlockConfig::Transformer};
    return session;
  }
};

// The ρ_out line of one operator and configuration, as drawn.
std::vector<double> drawnMeans(const RankDecayView& view, size_t op, BlockConfig config) {
  std::vector<double> values;
  const QCPGraph* graph = view.outputGraph(op, config);
  if (!graph) return values;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) values.push_back(it->value);
  return values;
}

std::vector<double> coreMeans(const rankdecay::RankDecayResult& result, size_t op) {
  std::vector<double> values;
  for (const auto& s : result.operators[op].outputs) values.push_back(s.mean);
  return values;
}

TEST_F(RankDecayViewTest, TogglingTheConfigurationRedrawsTheCoreCurves) {
  const Session session = rankDecaySession();
  const auto result = std::make_shared<const SessionResult>(runSession(session));
  ASSERT_TRUE(result->rankDecay);
  ASSERT_EQ(result->rankDecay->size(), 4u);  // every configuration listed, so toggles only redraw

  // The Engine's curves are the core's: the same request run directly gives the same numbers.
  rankdecay::RankDecayRequest request;
  request.source = rankdecay::parseRankDecaySource(session.rankDecay.source);
  request.operators = session.operators;
  request.config = BlockConfig::SanFfn;
  request.paths.paths = 10;
  request.seeds = 3;
  const rankdecay::RankDecayResult direct = rankdecay::runRankDecay(request, noFeedback());

  RankDecayView view;
  view.resize(1200, 900);
  view.setResult(result);
  EXPECT_TRUE(view.configToggle(BlockConfig::San)->isChecked());  // default: san and san+skip drawn
  const std::vector<double> san = drawnMeans(view, 0, BlockConfig::San);
  EXPECT_EQ(san, coreMeans((*result->rankDecay)[0], 0));
  EXPECT_EQ(drawnMeans(view, 1, BlockConfig::SanSkip), coreMeans((*result->rankDecay)[1], 1));
  EXPECT_TRUE(drawnMeans(view, 0, BlockConfig::SanFfn).empty());

  view.configToggle(BlockConfig::San)->setChecked(false);
  view.configToggle(BlockConfig::SanFfn)->setChecked(true);
  EXPECT_TRUE(drawnMeans(view, 0, BlockConfig::San).empty());
  const std::vector<double> ffn = drawnMeans(view, 0, BlockConfig::SanFfn);
  EXPECT_EQ(ffn, coreMeans(direct, 0));
  EXPECT_EQ(drawnMeans(view, 1, BlockConfig::SanFfn), coreMeans(direct, 1));
  ASSERT_EQ(ffn.size(), san.size());
  EXPECT_NE(ffn, san);  // the curves changed with the configuration
  EXPECT_EQ(view.saveState().at("configs"), nlohmann::json({"san+skip", "san+ffn"}));

  // The box plots follow the toggles too: one per drawn (configuration, operator).
  int boxes = 0;
  for (int i = 0; i < view.plot()->plottableCount(); ++i)
    boxes += qobject_cast<QCPStatisticalBox*>(view.plot()->plottable(i)) != nullptr;
  EXPECT_EQ(boxes, 4);
}

// The values of every graph drawn in one panel, in drawing order.
std::vector<std::vector<double>> panelGraphs(const RankDecayView& view, const std::string& panel) {
  std::vector<std::vector<double>> graphs;
  for (QCPGraph* graph : view.panel(panel)->graphs()) {
    graphs.emplace_back();
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) graphs.back().push_back(it->value);
  }
  return graphs;
}

// Entropy and effective rank per layer are drawn from the core's numbers, one line per operator and drawn
// configuration; the rigorous bound's local variant is drawn as markers (pure SAN, converged Sinkhorn).
TEST_F(RankDecayViewTest, AttentionStripsAndLocalRigorousMarkersShowTheCoresNumbers) {
  Session session = rankDecaySession();
  session.operators[1] = OperatorRegistry::builtin().parse("sinkhorn:T=2000");  // converged: the bound applies
  session.rankDecay.configs = {BlockConfig::San};
  const auto result = std::make_shared<const SessionResult>(runSession(session));
  RankDecayView view;
  view.resize(1200, 900);
  view.configToggle(BlockConfig::SanSkip)->setChecked(false);
  view.setResult(result);
  const rankdecay::RankDecayResult& san = (*result->rankDecay)[0];
  const auto entropy = panelGraphs(view, "entropy"), rank = panelGraphs(view, "rank");
  ASSERT_EQ(entropy.size(), 2u);
  ASSERT_EQ(rank.size(), 2u);
  for (size_t op = 0; op < 2; ++op) {
    std::vector<double> coreEntropy, coreRank;
    for (const auto& a : san.operators[op].attention) {
      coreEntropy.push_back(a.entropy);
      coreRank.push_back(a.effectiveRank);
    }
    EXPECT_EQ(entropy[op], coreEntropy) << op;
    EXPECT_EQ(rank[op], coreRank) << op;
  }
  const rankdecay::TheoryCurve* rigorous = nullptr;
  for (const auto& curve : san.operators[1].theory)
    if (curve.name == "rigorous") rigorous = &curve;
  ASSERT_TRUE(rigorous && rigorous->applies) << (rigorous ? rigorous->reason : "no rigorous curve");
  ASSERT_EQ(rigorous->localLog10.size(), 5u);  // ℓ = 0 … 4
  int markers = 0;
  for (QCPGraph* graph : view.panel("theory")->graphs())
    if (graph->name().contains("local")) {
      ++markers;
      EXPECT_EQ(graph->scatterStyle().shape(), QCPScatterStyle::ssTriangle);
      ASSERT_EQ(graph->data()->size(), 4);  // ℓ = 1 … 4
      EXPECT_DOUBLE_EQ(std::log10(graph->data()->at(0)->value), rigorous->localLog10[1]);
    }
  EXPECT_EQ(markers, 1);
}

TEST_F(RankDecayViewTest, ExportsEveryFormatAndRendersHeadless) {
  const auto result = std::make_shared<const SessionResult>(runSession(rankDecaySession()));
  const QString dir = QDir::tempPath() + "/tl_rank_decay_view_test";
  QDir().mkpath(dir);
  RankDecayView view;
  view.setResult(result);
  for (const char* format : {"png", "svg", "pdf", "csv"}) {
    const std::string path = (dir + "/rank." + format).toStdString();
    view.exportFigure(path, format, ExportSettings{});
    EXPECT_GT(QFileInfo(QString::fromStdString(path)).size(), 100) << format;
  }
  const std::string csv = readFile((dir + "/rank.csv").toStdString());
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "config,op,measure,index,median,q1,q3,mean,std,res_median");

  const RenderReport report = renderFigures(*result, (dir + "/render").toStdString());
  EXPECT_EQ(report.written.size(), 3u);  // the session's export formats: png, svg, pdf
}

TEST_F(RankDecayViewTest, WithoutCurvesItSaysHowToGetThem) {
  Session session = rankDecaySession();
  session.views = {"plan"};  // not listed: the Engine does not compute rank decay
  const auto result = std::make_shared<const SessionResult>(runSession(session));
  EXPECT_FALSE(result->rankDecay);
  RankDecayView view;
  view.setResult(result);
  EXPECT_NE(view.exportUnavailableReason().find("live"), std::string::npos);
  EXPECT_EQ(view.plot()->plottableCount(), 0);
}

}  // namespace
}  // namespace tl
