#include "widgets/views/asap_view.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>
#include <exception>
#include <sstream>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

// Beyond this many tokens the n² plans and the refits stop being interactive; the view says so.
constexpr int kMaxTokens = 1024;
constexpr int kMaxSlices = 128;

double lambdaOf(int halfDecades) { return std::pow(10.0, halfDecades / 2.0); }

// Ten panels share the figure: their titles are a size smaller than the other views' captions.
QFont panelTitleFont() { return QFont("DejaVu Sans", 8); }

QCPAxisRect* addTitledRect(QCustomPlot* plot, QCPLayoutGrid* grid, int column, const QString& xLabel,
                           const QString& yLabel, QCPTextElement** title) {
  auto* cell = new QCPLayoutGrid;
  grid->addElement(0, column, cell);
  *title = new QCPTextElement(plot, QString(), panelTitleFont());
  auto* rect = new QCPAxisRect(plot);
  cell->addElement(0, 0, *title);
  cell->addElement(1, 0, rect);
  cell->setRowStretchFactors({0.01, 1});
  styleAxis(rect->axis(QCPAxis::atBottom), xLabel);
  styleAxis(rect->axis(QCPAxis::atLeft), yLabel);
  return rect;
}

QCPGraph* addLine(QCPAxisRect* rect, const QColor& color, Qt::PenStyle style = Qt::SolidLine, double width = 1.2) {
  auto* g = new QCPGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setPen(QPen(color, width, style));
  return g;
}

QCPGraph* addLineWithPoints(QCPAxisRect* rect, const QColor& color, Qt::PenStyle style,
                            QCPScatterStyle::ScatterShape shape) {
  QCPGraph* g = addLine(rect, color, style);
  g->setScatterStyle(QCPScatterStyle(shape, 4));
  return g;
}

QCPGraph* addPoints(QCPAxisRect* rect, const QColor& color, double size) {
  auto* g = addLine(rect, color);
  g->setLineStyle(QCPGraph::lsNone);
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, size));
  return g;
}

// Below the panel (its cell's row 2), `perRow` entries a row: inside a small panel a legend would hide the data.
void addLegendBelow(QCPAxisRect* rect, std::initializer_list<QCPAbstractPlottable*> items, int perRow = 2) {
  auto* cell = static_cast<QCPLayoutGrid*>(rect->layout());
  auto* legend = new QCPLegend;
  cell->addElement(2, 0, legend);
  legend->setFont(QFont("DejaVu Sans", 8));
  legend->setBorderPen(Qt::NoPen);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setWrap(perRow);
  for (QCPAbstractPlottable* p : items) legend->addItem(new QCPPlottableLegendItem(legend, p));
  cell->setRowStretchFactors({0.01, 1, 0.01});
}

QVector<double> toQVector(const VecD& v) { return QVector<double>(v.data(), v.data() + v.size()); }

// The four plans of the marginal panels, in AsapView::MarginalPlan order: teacher grey, T_b orange, ASAP green, ASAP-0 blue.
const QColor kPlanColors[4] = {QColor(90, 90, 90), colColor(), QColor(44, 160, 44), rowColor()};

// A log axis cannot show 0: a value at rounding is drawn at 1e-16.
double onLogAxis(double value) { return std::max(value, 1e-16); }

std::vector<std::pair<double, double>> graphPoints(const QCPGraph* graph) {
  std::vector<std::pair<double, double>> points;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) points.emplace_back(it->key, it->value);
  return points;
}

// Comparison maps: log ratios to the teacher of ASAP (0), ASAP-0 (1), Sinkhorn T_b (4); differences (2, 3, 5).
// `shortIndex` picks T_b = 1 (0) or 3 (1).
MatD comparison(const AsapInspection& fit, int kind, int shortIndex) {
  const MatD& plan = kind >= 4 ? fit.shortPlans[shortIndex] : kind % 2 == 0 ? fit.asapPlan : fit.asap0Plan;
  if (kind == 2 || kind == 3 || kind == 5) return plan - fit.teacherPlan;
  // Padded rows and columns are 0 in every plan: ratio 1 there.
  return (fit.teacherPlan.array() > 0).select((plan.array() / fit.teacherPlan.array()).log(), 0.0);
}

}  // namespace

AsapView::AsapView(QWidget* parent) : FamilyView(parent) {
  worker_.setMaxThreadCount(1);
  sweepWorker_.setMaxThreadCount(1);
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  slicesSlider_ = new QSlider(Qt::Horizontal, content);
  slicesSlider_->setObjectName("asapSlices");
  slicesSlider_->setRange(1, kMaxSlices);
  slicesSlider_->setValue(16);
  slicesSlider_->setToolTip(tr("Number of slices L (the first L directions of a seeded bank); refits"));
  lambdaSlider_ = new QSlider(Qt::Horizontal, content);
  lambdaSlider_->setObjectName("asapLambda");
  lambdaSlider_->setRange(-20, 0);
  lambdaSlider_->setValue(-8);
  lambdaSlider_->setToolTip(tr("Ridge λ_B on the normalised risk, in half decades; refits"));
  slicesLabel_ = new QLabel(content);
  lambdaLabel_ = new QLabel(content);
  for (QLabel* l : {slicesLabel_, lambdaLabel_}) l->setMinimumWidth(88);
  fitBox_ = new QComboBox(content);
  fitBox_->setObjectName("asapFit");
  fitBox_->addItem(tr("LS fit"), "ls");
  fitBox_->addItem(tr("KL fit"), "kl");
  sliceBox_ = new QSpinBox(content);
  sliceBox_->setObjectName("asapSlice");
  sliceBox_->setToolTip(tr("Slice θ_l shown in the slice inspector"));
  comparisonBox_ = new QComboBox(content);
  comparisonBox_->setObjectName("asapComparison");
  comparisonBox_->addItem(tr("log(ASAP / teacher)"));
  comparisonBox_->addItem(tr("log(ASAP-0 / teacher)"));
  comparisonBox_->addItem(tr("ASAP − teacher"));
  comparisonBox_->addItem(tr("ASAP-0 − teacher"));
  comparisonBox_->addItem(tr("log(Sinkhorn T_b / teacher)"));
  comparisonBox_->addItem(tr("Sinkhorn T_b − teacher"));
  shortBudgetBox_ = new QComboBox(content);
  shortBudgetBox_->setObjectName("asapShortBudget");
  shortBudgetBox_->setToolTip(tr("Budget T_b of the short Sinkhorn baseline (frozen-layer table)"));
  shortBudgetBox_->addItem(tr("T_b = 1"), 1);
  shortBudgetBox_->addItem(tr("T_b = 3"), 3);
  shortBudgetBox_->setCurrentIndex(1);
  bar->addWidget(slicesLabel_);
  bar->addWidget(slicesSlider_, 1);
  bar->addSpacing(8);
  bar->addWidget(lambdaLabel_);
  bar->addWidget(lambdaSlider_, 1);
  bar->addSpacing(8);
  bar->addWidget(fitBox_);
  bar->addSpacing(8);
  bar->addWidget(new QLabel(tr("slice θ_l"), content));
  bar->addWidget(sliceBox_);
  bar->addSpacing(8);
  bar->addWidget(shortBudgetBox_);
  bar->addSpacing(8);
  bar->addWidget(comparisonBox_);
  layout->addLayout(bar);
  readout_ = new QLabel(content);
  readout_->setObjectName("asapReadout");
  readout_->setTextFormat(Qt::RichText);
  layout->addWidget(readout_);

  QCPLayoutGrid* grid = makePlot(content, tr("ASAP / sliced potentials"), QSize(900, 820), captionFont());
  plot_->setAutoAddPlottableToLegend(false);  // each panel has its own legend
  auto* top = new QCPLayoutGrid;
  auto* bottom = new QCPLayoutGrid;
  grid->addElement(0, 0, top);
  grid->addElement(1, 0, bottom);
  auto* diagnostics = new QCPLayoutGrid;
  grid->addElement(2, 0, diagnostics);
  grid->setRowSpacing(10);

  scatterRect_ = addTitledRect(plot_, top, 0, tr("teacher dual f̄_i (cost units, centred)"),
                               tr("fitted dual f̂_i = (Φβ)_i"),
                               &scatterTitle_);
  diagonal_ = addLine(scatterRect_, QColor(90, 90, 90));
  diagonal_->setName(tr("f̂ = f̄"));
  bandLow_ = addLine(scatterRect_, QColor(200, 30, 30), Qt::DashLine);
  bandHigh_ = addLine(scatterRect_, QColor(200, 30, 30), Qt::DashLine);
  bandLow_->setName(tr("f̄ ± δ"));
  scatter_ = addPoints(scatterRect_, rowColor(), 5);
  scatter_->setName(tr("tokens"));
  addLegendBelow(scatterRect_, {scatter_, diagonal_, bandLow_});

  matchingRect_ = addTitledRect(plot_, top, 1, tr("projection onto θ_l"), QString(), &matchingTitle_);
  QCPAxis* side = matchingRect_->axis(QCPAxis::atLeft);
  side->setRange(-0.4, 1.4);
  QSharedPointer<QCPAxisTickerText> sides(new QCPAxisTickerText);
  sides->addTick(1, tr("x (q)"));
  sides->addTick(0, tr("y (k)"));
  side->setTicker(sides);
  side->grid()->setVisible(false);
  queries_ = addPoints(matchingRect_, rowColor(), 6);
  keys_ = addPoints(matchingRect_, colColor(), 6);

  potentialRect_ = addTitledRect(plot_, top, 2, tr("z (projection onto θ_l)"), tr("potential"), &potentialTitle_);
  potentialCurve_ = addLine(potentialRect_, rowColor(), Qt::DotLine);
  potentialCurve_->setName(tr("f^θ extended"));
  interpolant_ = addLine(potentialRect_, QColor(44, 160, 44), Qt::SolidLine, 1.6);
  interpolant_->setName(tr("φ = ½z² − f^θ"));
  potentialPoints_ = addPoints(potentialRect_, rowColor(), 5);
  potentialPoints_->setName(tr("f^θ(x_i)"));
  addLegendBelow(potentialRect_, {potentialPoints_, potentialCurve_, interpolant_});

  phiMap_ = addMatrixMap(plot_, top, 0, 3, tr("token i"), tr("slice l"), divergingGradient());

  trajectoryRect_ = addTitledRect(plot_, top, 4, tr("step t (single normalisations)"), tr("max |sum − 1|"),
                                  &trajectoryTitle_);
  makeLogAxis(trajectoryRect_->axis(QCPAxis::atLeft));
  trajectoryRect_->axis(QCPAxis::atBottom)->setTicker(integerTicker());
  coldStart_ = addLine(trajectoryRect_, QColor(90, 90, 90));
  coldStart_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
  coldStart_->setName(tr("cold (u = v = 0)"));
  warmStart_ = addLine(trajectoryRect_, QColor(44, 160, 44), Qt::SolidLine, 1.6);
  warmStart_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
  warmStart_->setName(tr("warm (u = Φβ − a)"));
  addLegendBelow(trajectoryRect_, {coldStart_, warmStart_});
  top->setColumnStretchFactors({1.1, 1, 1.1, 0.9, 1});
  top->setColumnSpacing(14);

  teacherMap_ = addMatrixMap(plot_, bottom, 0, 0, tr("query i"), tr("key j"), viridisGradient());
  shortMap_ = addMatrixMap(plot_, bottom, 0, 1, tr("query i"), tr("key j"), viridisGradient());
  asapMap_ = addMatrixMap(plot_, bottom, 0, 2, tr("query i"), tr("key j"), viridisGradient());
  asap0Map_ = addMatrixMap(plot_, bottom, 0, 3, tr("query i"), tr("key j"), viridisGradient());
  comparisonMap_ = addMatrixMap(plot_, bottom, 0, 4, tr("query i"), tr("key j"), divergingGradient());
  bottom->setColumnStretchFactors({1, 1, 1, 1, 1});
  for (MatrixMap* map : {&phiMap_, &teacherMap_, &shortMap_, &asapMap_, &asap0Map_, &comparisonMap_})
    map->title->setFont(panelTitleFont());
  bottom->setColumnSpacing(14);

  // Marginals (§7.16 item 2): row and column sums of A = n·P per token, and ASAP's row band 1 ± η (B.34).
  const QString planNames[4] = {tr("teacher"), tr("Sinkhorn T_b"), tr("ASAP"), tr("ASAP-0")};
  for (int side = 0; side < 2; ++side) {
    marginalRects_[side] = addTitledRect(plot_, diagnostics, side, side == 0 ? tr("query i") : tr("key j"),
                                         side == 0 ? tr("row sum of A") : tr("column sum of A"),
                                         &marginalTitles_[side]);
    for (int k = 0; k < 4; ++k) {
      marginalGraphs_[side][k] = addLineWithPoints(marginalRects_[side], kPlanColors[k], Qt::SolidLine,
                                                   QCPScatterStyle::ssDisc);
      marginalGraphs_[side][k]->setName(planNames[k]);
    }
  }
  rowBandLow_ = addLine(marginalRects_[0], QColor(200, 30, 30), Qt::DashLine);
  rowBandHigh_ = addLine(marginalRects_[0], QColor(200, 30, 30), Qt::DashLine);
  rowBandLow_->setName(tr("1 ± η (B.34)"));
  addLegendBelow(marginalRects_[0], {marginalGraphs_[0][0], marginalGraphs_[0][1], marginalGraphs_[0][2],
                                     marginalGraphs_[0][3], rowBandLow_}, 3);

  // The slice sweep (§7.16 items 6 and 7): KLs between the one-sided plans and their bounds, and R², over L.
  klRect_ = addTitledRect(plot_, diagnostics, 2, tr("slices L"), tr("KL (one-sided plans)"), &klTitle_);
  r2Rect_ = addTitledRect(plot_, diagnostics, 3, tr("slices L"), tr("R² of the dual fit"), &r2Title_);
  for (QCPAxisRect* rect : {klRect_, r2Rect_}) makeLogAxis(rect->axis(QCPAxis::atBottom));
  makeLogAxis(klRect_->axis(QCPAxis::atLeft));
  const struct {
    QCPAxisRect* rect;
    QColor color;
    Qt::PenStyle style;
    QCPScatterStyle::ScatterShape shape;
    QString name;
  } curves[6] = {
      {r2Rect_, QColor(44, 160, 44), Qt::SolidLine, QCPScatterStyle::ssDisc, tr("R²")},
      {klRect_, rowColor(), Qt::SolidLine, QCPScatterStyle::ssDisc, tr("forward KL")},
      {klRect_, colColor(), Qt::SolidLine, QCPScatterStyle::ssDisc, tr("reverse KL")},
      {klRect_, QColor(90, 90, 90), Qt::DotLine, QCPScatterStyle::ssCircle, tr("variance (B.53)")},
      {klRect_, QColor(148, 103, 189), Qt::DashLine, QCPScatterStyle::ssCircle, tr("κ-bound (B.54)")},
      {klRect_, QColor(200, 30, 30), Qt::DashDotLine, QCPScatterStyle::ssSquare, tr("LS surrogate (B.70)")},
  };
  for (int c = 0; c < 6; ++c) {
    sweepGraphs_[c] = addLineWithPoints(curves[c].rect, curves[c].color, curves[c].style, curves[c].shape);
    sweepGraphs_[c]->setName(curves[c].name);
  }
  addLegendBelow(klRect_, {sweepGraphs_[1], sweepGraphs_[2], sweepGraphs_[3], sweepGraphs_[4], sweepGraphs_[5]}, 3);
  diagnostics->setColumnStretchFactors({1.2, 1.1, 1.3, 1.0});
  diagnostics->setColumnSpacing(14);
  grid->setRowStretchFactors({1, 1, 1.15});  // the bottom row's legends take some of its height
  layout->addWidget(plot_, 1);
  setContent(content);
  updateSliderLabels();

  const auto refitWithNewSettings = [this] {
    updateSliderLabels();
    refit();
  };
  connect(slicesSlider_, &QSlider::valueChanged, this, refitWithNewSettings);
  connect(lambdaSlider_, &QSlider::valueChanged, this, refitWithNewSettings);
  connect(fitBox_, &QComboBox::currentIndexChanged, this, refitWithNewSettings);
  connect(sliceBox_, &QSpinBox::valueChanged, this, [this] {
    drawSlice();
    plot_->replot();
  });
  for (QComboBox* box : {comparisonBox_, shortBudgetBox_})
    connect(box, &QComboBox::currentIndexChanged, this, [this] {
      drawPlans();
      drawMarginals();
      plot_->replot();
    });
}

AsapView::~AsapView() {
  for (QThreadPool* pool : {&worker_, &sweepWorker_}) {
    pool->clear();
    pool->waitForDone();
  }
}

void AsapView::updateSliderLabels() {
  slicesLabel_->setText(tr("slices L = %1").arg(slicesSlider_->value()));
  lambdaLabel_->setText(tr("λ_B = %1").arg(lambdaOf(lambdaSlider_->value()), 0, 'g', 2));
}

AsapInspectionSettings AsapView::wantedSettings(const SinkhornParams& teacher) const {
  AsapInspectionSettings s;
  s.teacher = teacher;
  s.L = slicesSlider_->value();
  s.lambdaB = lambdaOf(lambdaSlider_->value());
  s.fit = parseFitKind(fitBox_->currentData().toString().toStdString());
  return s;
}

void AsapView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  refit();
}

void AsapView::refit() {
  ++generation_;
  worker_.clear();  // a queued fit or sweep for older settings is no longer wanted
  sweepWorker_.clear();
  const OperatorRun* run = primaryRunOf(result_.get(), "sinkhorn");
  const uint64_t requestId = result_ ? result_->requestId : 0;
  QString why;
  if (!result_) why = tr("No result yet.");
  else if (!run)
    why = tr("This view fits sliced potentials to a Sinkhorn teacher's dual on the current input.\nThe primary "
             "operator is %1: pick Sinkhorn (T ≥ 2) in the Operator panel to see the fit.")
              .arg(primaryRun(result_.get()) ? operatorCaption(primaryRun(result_.get())->spec) : tr("none"));
  else if (!result_->input)
    why = tr("This result has no attention input to fit on.");
  else if (result_->input->nQueries() > kMaxTokens)
    why = tr("The ASAP view fits inputs of at most %1 tokens; this one has %2. Pick a smaller source.")
              .arg(kMaxTokens).arg(result_->input->nQueries());
  if (!why.isEmpty()) {
    inspection_.reset();
    showMessage(why);
    if (result_) emit redrawn(requestId);
    return;
  }
  const AsapInspectionSettings settings = wantedSettings(SinkhornParams::from(run->spec.params));
  auto input = result_->input;
  const uint64_t generation = generation_;
  worker_.start([this, input, settings, generation, requestId] {
    std::shared_ptr<const AsapInspection> fit;
    QString error;
    try {
      fit = std::make_shared<const AsapInspection>(inspectAsap(*input, settings));
    } catch (const std::exception& e) {  // tl::Error for inputs the fit refuses; anything else is reported too
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this,
        [this, fit, error, input, generation, requestId] {
          if (generation != generation_) return;  // a newer request is on its way
          if (!fit) {
            inspection_.reset();
            showMessage(error);
            emit redrawn(requestId);
            return;
          }
          fittedInput_ = input;
          showFit(fit, requestId);
        },
        Qt::QueuedConnection);
  });
}

void AsapView::finishPending() {
  // The fit, then the sweep it starts when it is shown.
  for (QThreadPool* pool : {&worker_, &sweepWorker_}) {
    pool->waitForDone();
    QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
  }
}

void AsapView::startSweep() {
  sweep_.reset();
  drawSweep();
  const uint64_t generation = generation_;
  const AsapInspectionSettings settings = inspection_->settings;
  auto input = fittedInput_;
  sweepWorker_.start([this, input, settings, generation] {
    std::shared_ptr<const SliceSweep> sweep;
    QString error;  // the panels stay empty and say why
    try {
      sweep = std::make_shared<const SliceSweep>(sweepSlices(*input, settings));
    } catch (const std::exception& e) {
      sweep = std::make_shared<const SliceSweep>();
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this,
        [this, sweep, error, generation] {
          if (generation != generation_) return;
          sweep_ = sweep;
          sweepError_ = error;
          drawSweep();
          plot_->replot(QCustomPlot::rpQueuedRefresh);
        },
        Qt::QueuedConnection);
  });
}

void AsapView::showFit(std::shared_ptr<const AsapInspection> fit, uint64_t requestId) {
  inspection_ = std::move(fit);
  showContent();
  const AsapInspectionSettings& s = inspection_->settings;
  heading_->setText(tr("Sliced-potential fit to Sinkhorn T=%1, eps=%2 on this input  —  L = %3, λ_B = %4, %5")
                        .arg(s.teacher.T).arg(s.teacher.eps).arg(s.L).arg(s.lambdaB, 0, 'g', 2)
                        .arg(s.fit == FitKind::Ls ? tr("LS") : tr("KL")));
  {
    const QSignalBlocker block(sliceBox_);
    sliceBox_->setRange(0, s.L - 1);
  }
  const double bound = inspection_->planRatioBound();
  // Dual stability bounds ASAP-0 against the plan of the exact dual: the teacher's only when it ends on columns.
  const QString band = inspection_->closing == Closing::Column
                           ? tr("plan ratios P<sub>ASAP-0</sub>/P<sub>teacher</sub> within")
                           : tr("dual-stability band (to the T − 1 plan)");
  readout_->setText(tr("R² = <b>%1</b> · δ = ‖f̂ − f̄‖<sub>∞</sub> = <b>%2</b> · %6 "
                       "e<sup>±2δ/ε</sup> = [<b>%3</b>, <b>%4</b>] · %5 tokens")
                        .arg(inspection_->quality.r2, 0, 'f', 4).arg(inspection_->quality.delta, 0, 'g', 3)
                        .arg(1.0 / bound, 0, 'g', 3).arg(bound, 0, 'g', 3).arg(inspection_->fitted.size())
                        .arg(band));
  drawScatter();
  drawSlice();
  drawPlans();
  drawTrajectories();
  drawMarginals();
  startSweep();
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(requestId);
}

void AsapView::drawScatter() {
  const AsapInspection& fit = *inspection_;
  scatter_->setData(toQVector(fit.target), toQVector(fit.fitted));
  const double lo = std::min(fit.target.minCoeff(), fit.fitted.minCoeff());
  const double hi = std::max(fit.target.maxCoeff(), fit.fitted.maxCoeff());
  const double pad = 0.05 * std::max(hi - lo, 1e-9), d = fit.quality.delta;
  const QVector<double> ends{lo - pad, hi + pad};
  diagonal_->setData(ends, ends, true);
  bandLow_->setData(ends, {ends[0] - d, ends[1] - d}, true);
  bandHigh_->setData(ends, {ends[0] + d, ends[1] + d}, true);
  scatterRect_->axis(QCPAxis::atBottom)->setRange(lo - pad, hi + pad);
  scatterRect_->axis(QCPAxis::atLeft)->setRange(lo - pad, hi + pad);
  scatterTitle_->setText(tr("dual fit: R² = %1, δ = %2").arg(scatterR2(), 0, 'f', 4).arg(d, 0, 'g', 3));
}

void AsapView::drawSlice() {
  if (!inspection_) return;
  const int l = sliceBox_->value();
  const SliceInspection s = inspectSlice(*fittedInput_, *inspection_, l);
  queries_->setData(toQVector(s.x), QVector<double>(int(s.x.size()), 1.0));
  keys_->setData(toQVector(s.y), QVector<double>(int(s.y.size()), 0.0));
  // The sorted matching: one segment per pair (query rank r ↔ key rank r). The view's only items are these.
  plot_->clearItems();
  for (Eigen::Index i = 0; i < s.x.size(); ++i) {
    auto* segment = new QCPItemLine(plot_);
    segment->setClipAxisRect(matchingRect_);
    segment->setClipToAxisRect(true);
    for (QCPItemPosition* p : {segment->start, segment->end})
      p->setAxes(matchingRect_->axis(QCPAxis::atBottom), matchingRect_->axis(QCPAxis::atLeft));
    segment->start->setCoords(s.x(i), 1.0);
    segment->end->setCoords(s.y(s.matchedKey[size_t(i)]), 0.0);
    segment->setPen(QPen(QColor(120, 120, 120, 140), 0.8));
  }
  const double lo = s.grid(0), hi = s.grid(s.grid.size() - 1);
  matchingRect_->axis(QCPAxis::atBottom)->setRange(lo, hi);
  matchingTitle_->setText(tr("θ_%1: sorted matching").arg(l));
  potentialTitle_->setText(tr("1-D potential along θ_%1").arg(l));
  potentialPoints_->setData(toQVector(s.x), toQVector(s.potential));
  potentialCurve_->setData(toQVector(s.grid), toQVector(s.potentialCurve), true);
  interpolant_->setData(toQVector(s.grid), toQVector(s.interpolant), true);
  potentialRect_->axis(QCPAxis::atBottom)->setRange(lo, hi);
  const double vlo = std::min(s.potentialCurve.minCoeff(), s.interpolant.minCoeff());
  const double vhi = std::max(s.potentialCurve.maxCoeff(), s.interpolant.maxCoeff());
  potentialRect_->axis(QCPAxis::atLeft)->setRange(vlo - 0.05 * (vhi - vlo + 1e-9), vhi + 0.05 * (vhi - vlo + 1e-9));
}

int AsapView::shortBudget() const { return shortBudgetBox_->currentData().toInt(); }

void AsapView::drawPlans() {
  if (!inspection_) return;
  const AsapInspection& fit = *inspection_;
  const int shortIndex = shortBudget() == 1 ? 0 : 1;
  const double hi = std::max({fit.teacherPlan.maxCoeff(), fit.asapPlan.maxCoeff(), fit.asap0Plan.maxCoeff(),
                              fit.shortPlans[shortIndex].maxCoeff()});
  fillMatrixMap(teacherMap_, fit.teacherPlan, 0, hi);
  fillMatrixMap(shortMap_, fit.shortPlans[shortIndex], 0, hi);
  fillMatrixMap(asapMap_, fit.asapPlan, 0, hi);
  fillMatrixMap(asap0Map_, fit.asap0Plan, 0, hi);
  // Short titles: five maps share the row. "rel. err" is ‖A − A^T‖_F/‖A^T‖_F, "row / col" the largest errors.
  const auto errors = [](const MarginalErrors& e) {
    return tr("max row / col err %1 / %2").arg(e.rowMax, 0, 'g', 2).arg(e.colMax, 0, 'g', 2);
  };
  teacherMap_.title->setText(
      tr("teacher: Sinkhorn T = %1\n%2").arg(fit.settings.teacher.T).arg(errors(fit.teacherErrors)));
  asapMap_.title->setText(tr("ASAP (%1 closing): rel. err %2\n%3")
                              .arg(closingName(fit.closing)).arg(fit.asapRelativeError, 0, 'g', 2)
                              .arg(errors(fit.asapErrors)));
  asap0Map_.title->setText(tr("ASAP-0: rel. err %1\n%2").arg(fit.asap0RelativeError, 0, 'g', 2)
                               .arg(errors(fit.asap0Errors)));
  shortMap_.title->setText(tr("Sinkhorn T_b = %1: rel. err %2\n%3")
                               .arg(shortBudget()).arg(fit.shortRelativeErrors[shortIndex], 0, 'g', 2)
                               .arg(errors(fit.shortErrors[shortIndex])));
  const int kind = comparisonBox_->currentIndex();
  const MatD c = comparison(fit, kind, shortIndex);
  const double m = std::max(c.cwiseAbs().maxCoeff(), 1e-12);
  fillMatrixMap(comparisonMap_, c, -m, m);
  comparisonMap_.title->setText(comparisonBox_->currentText());
  const double phiMax = std::max(fit.phi.cwiseAbs().maxCoeff(), 1e-12);
  fillMatrixMap(phiMap_, fit.phi, -phiMax, phiMax);
  phiMap_.title->setText(tr("Φ (%1 × %2)").arg(fit.phi.rows()).arg(fit.phi.cols()));
}

void AsapView::drawTrajectories() {
  const AsapInspection& fit = *inspection_;
  auto draw = [](QCPGraph* graph, const std::vector<double>& errors) {
    QVector<double> steps, values;
    for (size_t t = 0; t < errors.size(); ++t) {
      steps << double(t + 1);
      values << onLogAxis(errors[t]);
    }
    graph->setData(steps, values, true);
  };
  draw(coldStart_, fit.coldStartErrors);
  draw(warmStart_, fit.warmStartErrors);
  if (fit.coldStartErrors.empty()) {
    trajectoryTitle_->setText(tr("warm start: not drawn under keep-queries padding"));
    return;
  }
  const int T = fit.settings.teacher.T;
  const size_t atT = std::min(size_t(T), fit.coldStartErrors.size()) - 1;
  trajectoryTitle_->setText(tr("Sinkhorn warm-started by ASAP\nat t = T = %1: %2 warm, %3 cold")
                                .arg(T).arg(fit.warmStartErrors[atT], 0, 'g', 2).arg(fit.coldStartErrors[atT], 0, 'g', 2));
  trajectoryRect_->axis(QCPAxis::atBottom)->setRange(0.5, double(fit.coldStartErrors.size()) + 0.5);
  double lo = 1.0, hi = 1e-16;
  for (const auto* errors : {&fit.coldStartErrors, &fit.warmStartErrors})
    for (double e : *errors) {
      lo = std::min(lo, std::max(e, 1e-16));
      hi = std::max(hi, e);
    }
  trajectoryRect_->axis(QCPAxis::atLeft)->setRange(lo / 3, hi * 3);
}

std::vector<std::pair<double, double>> AsapView::trajectory(bool warm) const {
  return graphPoints(warm ? warmStart_ : coldStart_);
}

void AsapView::drawMarginals() {
  if (!inspection_) return;
  const AsapInspection& fit = *inspection_;
  const int shortIndex = shortBudget() == 1 ? 0 : 1;
  const MatD* plans[4] = {&fit.teacherPlan, &fit.shortPlans[shortIndex], &fit.asapPlan, &fit.asap0Plan};
  double lo = 1, hi = 1;
  for (int k = 0; k < 4; ++k) {
    const PlanMarginals sums = planMarginals(*plans[k]);
    for (int side = 0; side < 2; ++side) {
      const VecD& v = side == 0 ? sums.rows : sums.cols;
      const VecD tokens = VecD::LinSpaced(v.size(), 0, double(v.size() - 1));
      marginalGraphs_[side][k]->setData(toQVector(tokens), toQVector(v), true);
      lo = std::min(lo, v.minCoeff());
      hi = std::max(hi, v.maxCoeff());
    }
  }
  marginalGraphs_[0][1]->setName(tr("Sinkhorn T_b = %1").arg(shortBudget()));
  const double n = double(fit.teacherPlan.rows());
  const QVector<double> ends{-0.5, n - 0.5};
  if (fit.rowBound) {
    const double eta = fit.rowBound->eta;
    rowBandLow_->setData(ends, {1 - eta, 1 - eta}, true);
    rowBandHigh_->setData(ends, {1 + eta, 1 + eta}, true);
    lo = std::min(lo, 1 - eta);
    hi = std::max(hi, 1 + eta);
    marginalTitles_[0]->setText(tr("row sums: ASAP within 1 ± η, η = %1 (B.34)\nlargest |row − 1|: ASAP %2, ASAP-0 %3")
                                    .arg(eta, 0, 'g', 2).arg(fit.asapErrors.rowMax, 0, 'g', 2)
                                    .arg(fit.asap0Errors.rowMax, 0, 'g', 2));
  } else {
    rowBandLow_->data()->clear();
    rowBandHigh_->data()->clear();
    marginalTitles_[0]->setText(fit.closing == Closing::Row
                                    ? tr("row sums (row closing: ASAP's rows are exact,\nthe B.34 bound is for column closing)")
                                    : tr("row sums (no B.34 bound under keep-queries padding)"));
  }
  marginalTitles_[1]->setText(tr("column sums (colours as rows)\nlargest |col − 1|: teacher %1, ASAP %2")
                                  .arg(fit.teacherErrors.colMax, 0, 'g', 2).arg(fit.asapErrors.colMax, 0, 'g', 2));
  const double pad = 0.05 * std::max(hi - lo, 1e-3);
  for (int side = 0; side < 2; ++side) {
    marginalRects_[side]->axis(QCPAxis::atBottom)->setRange(ends[0], ends[1]);
    marginalRects_[side]->axis(QCPAxis::atLeft)->setRange(lo - pad, hi + pad);
  }
}

void AsapView::drawSweep() {
  static const SliceSweep kNone;
  const SliceSweep& sweep = sweep_ ? *sweep_ : kNone;
  QVector<double> slices;
  for (int L : sweep.slices) slices << double(L);
  QVector<double> values[6];
  for (size_t k = 0; k < sweep.slices.size(); ++k) {
    const OneSidedKl& kl = sweep.kl[k];
    values[0] << sweep.r2[k];
    values[1] << onLogAxis(kl.forward);
    values[2] << onLogAxis(kl.reverse);
    values[3] << onLogAxis(kl.varianceBound);
    values[4] << onLogAxis(kl.kappaBound);
    values[5] << onLogAxis(sweep.lsSurrogate[k]);
  }
  for (int c = 0; c < 6; ++c) sweepGraphs_[c]->setData(slices, values[c], true);
  if (!sweep_) {
    klTitle_->setText(tr("KL diagnostics: refitting for L = 1 … %1…").arg(kSweepMaxSlices));
    r2Title_->setText(tr("slice-count ablation: refitting…"));
    return;
  }
  if (sweep.slices.empty()) {
    klTitle_->setText(sweepError_.isEmpty() ? tr("KL diagnostics: not drawn under keep-queries padding")
                                            : tr("KL diagnostics: %1").arg(sweepError_));
    r2Title_->setText(tr("slice-count ablation: not drawn"));
    return;
  }
  const int L = inspection_->settings.L;
  const size_t own = size_t(std::find(sweep.slices.begin(), sweep.slices.end(), L) - sweep.slices.begin());
  klTitle_->setText(tr("teacher P^T vs ASAP-0 P_β, refitted per L (κ = %1)\nat L = %2: forward %3, reverse %4")
                        .arg(sweep.kappa, 0, 'g', 3).arg(L).arg(sweep.kl[own].forward, 0, 'g', 2)
                        .arg(sweep.kl[own].reverse, 0, 'g', 2));
  r2Title_->setText(tr("slice-count ablation\nR² = %1 at L = %2").arg(sweep.r2[own], 0, 'f', 3).arg(L));
  for (QCPAxisRect* rect : {klRect_, r2Rect_})
    rect->axis(QCPAxis::atBottom)->setRange(slices.front() / 1.5, slices.back() * 1.5);
  double lo = values[1][0], hi = lo;
  for (int c = 1; c < 6; ++c)
    for (double v : values[c]) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  klRect_->axis(QCPAxis::atLeft)->setRange(lo / 3, hi * 3);
  const auto [r2Lo, r2Hi] = std::minmax_element(values[0].begin(), values[0].end());
  r2Rect_->axis(QCPAxis::atLeft)->setRange(std::min(*r2Lo, 0.0) - 0.02, std::max(*r2Hi, 1.0) + 0.02);
}

std::vector<double> AsapView::drawnMarginals(bool rows, MarginalPlan plan) const {
  std::vector<double> sums;
  for (const auto& point : graphPoints(marginalGraphs_[rows ? 0 : 1][int(plan)])) sums.push_back(point.second);
  return sums;
}

std::vector<double> AsapView::drawnRowBand() const {
  if (rowBandLow_->data()->isEmpty()) return {};
  return {rowBandLow_->data()->at(0)->value, rowBandHigh_->data()->at(0)->value};
}

std::vector<std::pair<double, double>> AsapView::drawnSweep(SweepCurve curve) const {
  return graphPoints(sweepGraphs_[int(curve)]);
}

double AsapView::scatterR2() const {
  double residual = 0, total = 0;
  for (auto it = scatter_->data()->constBegin(); it != scatter_->data()->constEnd(); ++it) {
    residual += (it->value - it->key) * (it->value - it->key);
    total += it->key * it->key;
  }
  return total > 0 ? 1.0 - residual / total : 0.0;
}

int AsapView::scatterPoints() const { return showingContent() ? scatter_->data()->size() : 0; }

void AsapView::exportFigure(const std::string& path, const std::string& format,
                            const ExportSettings& settings) const {
  if (format != "csv") return FamilyView::exportFigure(path, format, settings);
  if (!inspection_) throw InvalidArgument("the ASAP view has no fit to export");
  const AsapInspection& fit = *inspection_;
  std::ostringstream csv;
  csv.precision(17);
  csv << "# ASAP fit on one input: teacher Sinkhorn T=" << fit.settings.teacher.T << " eps=" << fit.settings.teacher.eps
      << ", L=" << fit.settings.L << ", lambda_b=" << fit.settings.lambdaB << ", fit=" << fitKindName(fit.settings.fit)
      << ", r2=" << fit.quality.r2 << ", delta=" << fit.quality.delta << "\n";
  csv << "token,teacher_dual,fitted_dual,error\n";
  for (Eigen::Index i = 0; i < fit.fitted.size(); ++i)
    csv << i << ',' << fit.target(i) << ',' << fit.fitted(i) << ',' << fit.fitted(i) - fit.target(i) << '\n';

  // The marginal panels: every token of the input (padded ones sum to 0).
  const PlanMarginals sums[5] = {planMarginals(fit.teacherPlan), planMarginals(fit.asapPlan),
                                 planMarginals(fit.asap0Plan), planMarginals(fit.shortPlans[0]),
                                 planMarginals(fit.shortPlans[1])};
  csv << "\n# row and column sums of A = n*P";
  if (fit.rowBound) csv << "; ASAP rows within 1 +- eta, eta=" << fit.rowBound->eta << " (B.34)";
  csv << "\ntoken,teacher_row,asap_row,asap0_row,tb1_row,tb3_row,teacher_col,asap_col,asap0_col,tb1_col,tb3_col\n";
  for (Eigen::Index i = 0; i < sums[0].rows.size(); ++i) {
    csv << i;
    for (const PlanMarginals& m : sums) csv << ',' << m.rows(i);
    for (const PlanMarginals& m : sums) csv << ',' << m.cols(i);
    csv << '\n';
  }
  // The sweep panels, once the sweep is in.
  if (sweep_ && !sweep_->slices.empty()) {
    csv << "\n# slice sweep: KL between the one-sided plans of the teacher and ASAP-0, kappa=" << sweep_->kappa
        << "\nL,r2,residual_mean_square,forward_kl,reverse_kl,variance_bound,pair_kappa,kappa_bound,ls_surrogate\n";
    for (size_t k = 0; k < sweep_->slices.size(); ++k) {
      const OneSidedKl& kl = sweep_->kl[k];
      csv << sweep_->slices[k] << ',' << sweep_->r2[k] << ',' << sweep_->residualMeanSquare[k] << ',' << kl.forward
          << ',' << kl.reverse << ',' << kl.varianceBound << ',' << kl.kappa << ',' << kl.kappaBound << ','
          << sweep_->lsSurrogate[k] << '\n';
    }
  }
  writeFileAtomically(path, csv.str());
}

nlohmann::json AsapView::saveState() const {
  return {{"slices", slicesSlider_->value()},
          {"lambda_b_half_decades", lambdaSlider_->value()},
          {"fit", fitBox_->currentData().toString().toStdString()},
          {"slice", sliceBox_->value()},
          {"comparison", comparisonBox_->currentIndex()},
          {"short_budget", shortBudget()}};
}

void AsapView::restoreState(const nlohmann::json& state) {
  const QSignalBlocker a(slicesSlider_), b(lambdaSlider_), c(fitBox_), d(sliceBox_), e(comparisonBox_),
      f(shortBudgetBox_);
  slicesSlider_->setValue(stateValue(state, "slices", slicesSlider_->value()));
  lambdaSlider_->setValue(stateValue(state, "lambda_b_half_decades", lambdaSlider_->value()));
  const int fit = fitBox_->findData(QString::fromStdString(stateValue(state, "fit", std::string("ls"))));
  if (fit >= 0) fitBox_->setCurrentIndex(fit);
  sliceBox_->setRange(0, kMaxSlices - 1);
  sliceBox_->setValue(stateValue(state, "slice", 0));
  comparisonBox_->setCurrentIndex(std::clamp(stateValue(state, "comparison", 0), 0, comparisonBox_->count() - 1));
  const int shortBudget = shortBudgetBox_->findData(stateValue(state, "short_budget", 3));
  if (shortBudget >= 0) shortBudgetBox_->setCurrentIndex(shortBudget);
  updateSliderLabels();
  if (result_) refit();
}

}  // namespace tl
