#include "widgets/views/convergence_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <iterator>

#include "widgets/plot/plot_export.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

// After a row step the rows are exact (error ~1e-16) and the columns carry the error, and the other way round
// after a column step, so each side's curve zigzags across 16 decades. The informative curve is the worse
// side per step; the per-side values are drawn as dots on request.
struct Curve {
  const char* label;
  double (*value)(const MarginalErrors&);
  enum Hue { Worst, Row, Col } hue;
  bool mean;
  bool dotsOnly;
};
const Curve kCurves[] = {
    {"max error (worse side)", [](const MarginalErrors& e) { return std::max(e.rowMax, e.colMax); }, Curve::Worst, false, false},
    {"mean error (worse side)", [](const MarginalErrors& e) { return std::max(e.rowMean, e.colMean); }, Curve::Worst, true, false},
    {"row max", [](const MarginalErrors& e) { return e.rowMax; }, Curve::Row, false, true},
    {"col max", [](const MarginalErrors& e) { return e.colMax; }, Curve::Col, false, true},
    {"row mean", [](const MarginalErrors& e) { return e.rowMean; }, Curve::Row, true, true},
    {"col mean", [](const MarginalErrors& e) { return e.colMean; }, Curve::Col, true, true}};

// The worse-side curve of each operator in compare mode: a hue and a marker of its own, apart from the row and
// column hues (a darker shade of one grey was indistinguishable from it, on screen and in print).
QColor worstColor(int runIndex) {
  static const QColor kColors[] = {QColor(40, 40, 40), QColor(136, 46, 114), QColor(17, 140, 100), QColor(180, 140, 0)};
  return kColors[size_t(runIndex) % std::size(kColors)];
}

QCPScatterStyle::ScatterShape worstMarker(int runIndex) {
  static const QCPScatterStyle::ScatterShape kShapes[] = {QCPScatterStyle::ssCircle, QCPScatterStyle::ssSquare,
                                                          QCPScatterStyle::ssTriangle, QCPScatterStyle::ssDiamond};
  return kShapes[size_t(runIndex) % std::size(kShapes)];
}

// Row and column curves of further operators get darker shades of the same two hues.
QColor curveColor(Curve::Hue hue, int runIndex) {
  if (hue == Curve::Worst) return worstColor(runIndex);
  const QColor base = hue == Curve::Row ? rowColor() : colColor();
  return runIndex == 0 ? base : base.darker(100 + 45 * runIndex);
}

}  // namespace

ConvergenceView::ConvergenceView(QWidget* parent) : View(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  perSide_ = new QCheckBox(tr("per side"), this);
  perSide_->setObjectName("perSide");
  perSide_->setToolTip(tr("Also plot the row and column errors separately (dots): the side just closed is exact"));
  bar->addWidget(perSide_);
  showMeans_ = new QCheckBox(tr("show means"), this);
  showMeans_->setObjectName("showMeans");
  showMeans_->setToolTip(tr("Also plot the mean |sum − target| (dashed)"));
  bar->addWidget(showMeans_);
  bar->addStretch(1);
  layout->addLayout(bar);

  plot_ = new QCustomPlot(this);
  plot_->setMinimumSize(320, 220);
  plot_->plotLayout()->insertRow(0);
  heading_ = new QCPTextElement(plot_, tr("Marginal error per step"), captionFont());
  plot_->plotLayout()->addElement(0, 0, heading_);
  styleAxis(plot_->xAxis, tr("step t (single normalisations, rows first)"));
  styleAxis(plot_->yAxis, tr("max |sum − target|"));
  makeLogAxis(plot_->yAxis);
  plot_->xAxis->setTicker(integerTicker());
  // The legend sits in a row under the axes, where it never covers a curve.
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont("DejaVu Sans", 9));
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot_->legend->setWrap(2);
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->addElement(2, 0, plot_->legend);
  plot_->plotLayout()->setRowStretchFactor(2, 0.001);
  plot_->plotLayout()->setRowSpacing(0);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  layout->addWidget(plot_, 1);

  for (QCheckBox* box : {perSide_, showMeans_})
    connect(box, &QCheckBox::toggled, this, [this] {
      rebuild();
      plot_->replot();
    });
}

void ConvergenceView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  rebuild();
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  if (result_) emit redrawn(result_->requestId);
}

void ConvergenceView::rebuild() {
  plot_->clearGraphs();
  if (!result_ || result_->runs.empty()) return;
  const bool compare = result_->runs.size() > 1;
  int steps = 1;
  double lowest = 1, highest = kErrorFloor;
  for (size_t r = 0; r < result_->runs.size(); ++r) {
    const OperatorRun& run = result_->runs[r];
    const auto& history = run.result.errorHistory;
    steps = std::max(steps, int(history.size()));
    for (const Curve& curve : kCurves) {
      if (curve.mean && !showMeans_->isChecked()) continue;
      if (curve.dotsOnly && !perSide_->isChecked()) continue;
      QCPGraph* g = plot_->addGraph();
      // Numbered as in the compare view's heading: two operators of one family read apart.
      const QString prefix =
          compare ? QString("%1 %2 ").arg(r + 1).arg(QString::fromStdString(run.spec.family)) : QString();
      g->setName(prefix + curve.label);
      const QColor color = curveColor(curve.hue, int(r));
      QPen pen(color, curve.hue == Curve::Worst && !curve.mean ? 1.6 : 1.0, curve.mean ? Qt::DashLine : Qt::SolidLine);
      g->setPen(pen);
      if (curve.dotsOnly) {
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(curve.mean ? QCPScatterStyle::ssCircle : QCPScatterStyle::ssDisc, color,
                                           curve.mean ? Qt::white : color, 4));
      } else if (history.size() <= 60 && !curve.mean) {
        // Markers while individual steps are distinguishable (and for T = 1, a single point).
        g->setScatterStyle(QCPScatterStyle(worstMarker(int(r)), color, Qt::white, 5));
      }
      QVector<double> t, e;
      for (size_t s = 0; s < history.size(); ++s) {
        const double value = std::max(curve.value(history[s]), kErrorFloor);
        t.push_back(double(s + 1));
        e.push_back(value);
        lowest = std::min(lowest, value);
        highest = std::max(highest, value);
      }
      g->setData(t, e, true);
    }
  }
  plot_->xAxis->setRange(0.5, steps + 0.5);
  // At least three decades, centred on the data in log scale: over fewer the log ticker labels every unit of a
  // decade (2·10⁰, 3·10⁰, …), which piled up on a short axis for one-step operators.
  double bottom = lowest / 3, top = std::max(highest * 3, lowest * 10);
  if (top < 1000 * bottom) {
    const double middle = std::sqrt(bottom * top), half = std::sqrt(1000.0);
    bottom = middle / half;
    top = middle * half;
  }
  plot_->yAxis->setRange(bottom, top);
  const OperatorRun& first = result_->runs.front();
  QString compared;
  for (size_t r = 0; r < result_->runs.size(); ++r)
    compared += QString("%1%2 = %3")
                    .arg(r ? "\n" : "")
                    .arg(r + 1)
                    .arg(operatorCaption(result_->runs[r].spec).replace('\n', ' '));
  heading_->setText(compare ? compared : operatorCaption(first.spec));
}

nlohmann::json ConvergenceView::saveState() const {
  return {{"showMeans", showMeans_->isChecked()}, {"perSide", perSide_->isChecked()}};
}

void ConvergenceView::restoreState(const nlohmann::json& state) {
  showMeans_->setChecked(stateValue(state, "showMeans", false));
  perSide_->setChecked(stateValue(state, "perSide", false));
}

void ConvergenceView::exportFigure(const std::string& path, const std::string& format,
                                   const ExportSettings& settings) const {
  exportPlot(*plot_, path, format, settings);
}

}  // namespace tl
