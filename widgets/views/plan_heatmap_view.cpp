#include "widgets/views/plan_heatmap_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "widgets/plot/plot_export.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

// Log colour scales start this far below the largest entry; smaller entries (and exact zeros of
// padded rows) are drawn in the lowest colour.
constexpr double kLogColorDecades = 8;
// Up to this many queries and keys the map shows every entry; beyond, display tiles (user-settable).
constexpr int kDefaultPoolAbove = 1024;

// Token coordinate of the centre of block b of `starts` (block b covers [starts[b], starts[b+1])).
double blockCentre(const std::vector<long long>& starts, size_t b) {
  return 0.5 * double(starts[b] + starts[b + 1] - 1);
}

QCPBars* makeSumBars(QCPAxis* keyAxis, QCPAxis* valueAxis, const QColor& color) {
  auto* bars = new QCPBars(keyAxis, valueAxis);
  bars->setWidth(1.0);
  bars->setPen(Qt::NoPen);
  bars->setAntialiased(false);  // adjacent bars without hairline seams
  QColor fill = color;
  fill.setAlpha(170);
  bars->setBrush(fill);
  return bars;
}

QCPGraph* makeTargetLine(QCPAxis* keyAxis, QCPAxis* valueAxis) {
  auto* line = new QCPGraph(keyAxis, valueAxis);
  line->setLineStyle(QCPGraph::lsStepCenter);
  line->setPen(QPen(QColor(200, 30, 30), 1.2, Qt::DashLine));
  return line;
}

QString logColourTip() {
  return QObject::tr("Colour by log10 A_ij (at most %1 decades below the largest entry)").arg(kLogColorDecades);
}

}  // namespace

PlanHeatmapView::PlanHeatmapView(QWidget* parent) : View(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  logToggle_ = new QCheckBox(tr("log colour scale"), this);
  logToggle_->setObjectName("logColor");
  logToggle_->setToolTip(logColourTip());
  poolAbove_ = new QSpinBox(this);
  poolAbove_->setObjectName("poolAbove");
  poolAbove_->setRange(16, 8192);
  poolAbove_->setValue(kDefaultPoolAbove);
  poolAbove_->setPrefix(tr("pool above "));
  poolAbove_->setToolTip(tr("Plans with more queries or keys than this are drawn as display tiles: the block mean "
                            "or max over at most this many blocks a side, computed where the plan lives (the GPU "
                            "for a CUDA result), without forming the n×n matrix"));
  poolKind_ = new QComboBox(this);
  poolKind_->setObjectName("poolKind");
  poolKind_->addItem(tr("block mean"));
  poolKind_->addItem(tr("block max"));
  hover_ = new QLabel(this);
  hover_->setObjectName("hoverReadout");
  hover_->setTextFormat(Qt::RichText);
  bar->addWidget(logToggle_);
  bar->addWidget(poolAbove_);
  bar->addWidget(poolKind_);
  bar->addStretch(1);
  bar->addWidget(hover_);
  layout->addLayout(bar);

  plot_ = new QCustomPlot(this);
  plot_->setMinimumSize(320, 280);
  buildLayout();
  layout->addWidget(plot_, 1);

  connect(logToggle_, &QCheckBox::toggled, this, [this] {
    fillMap();
    plot_->replot();
  });
  auto redraw = [this] {
    if (!result_) return;
    setResult(result_);
  };
  connect(poolAbove_, &QSpinBox::valueChanged, this, redraw);
  connect(poolKind_, &QComboBox::currentIndexChanged, this, redraw);
  connect(plot_, &QCustomPlot::mouseMove, this, &PlanHeatmapView::onHover);
}

// Layout: a heading row above a 2×3 grid
//   [column sums]  .            .
//   [plan map   ]  [row sums]   [colour scale]
// with margin groups so the bars share the map's cell positions exactly.
void PlanHeatmapView::buildLayout() {
  plot_->plotLayout()->clear();
  heading_ = new QCPTextElement(plot_, tr("Transport plan"), captionFont());
  plot_->plotLayout()->addElement(0, 0, heading_);
  auto* grid = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(1, 0, grid);

  mapRect_ = new QCPAxisRect(plot_);
  colSumRect_ = new QCPAxisRect(plot_);
  rowSumRect_ = new QCPAxisRect(plot_);
  scale_ = new QCPColorScale(plot_);
  grid->addElement(0, 0, colSumRect_);
  grid->addElement(1, 0, mapRect_);
  grid->addElement(1, 1, rowSumRect_);
  grid->addElement(1, 2, scale_);
  grid->setColumnStretchFactors({6, 1.5, 0.45});
  grid->setRowStretchFactors({1.3, 6});
  grid->setColumnSpacing(4);
  grid->setRowSpacing(4);

  auto* columns = new QCPMarginGroup(plot_);
  auto* rows = new QCPMarginGroup(plot_);
  mapRect_->setMarginGroup(QCP::msLeft | QCP::msRight, columns);
  colSumRect_->setMarginGroup(QCP::msLeft | QCP::msRight, columns);
  mapRect_->setMarginGroup(QCP::msTop | QCP::msBottom, rows);
  rowSumRect_->setMarginGroup(QCP::msTop | QCP::msBottom, rows);
  scale_->setMarginGroup(QCP::msTop | QCP::msBottom, rows);

  // Matrix orientation: query 0 at the top, key 0 at the left.
  QCPAxis* keyAxis = mapRect_->axis(QCPAxis::atBottom);
  QCPAxis* queryAxis = mapRect_->axis(QCPAxis::atLeft);
  queryAxis->setRangeReversed(true);
  styleAxis(keyAxis, tr("key j"));
  styleAxis(queryAxis, tr("query i"));
  for (QCPAxis* a : {keyAxis, queryAxis}) {
    a->grid()->setVisible(false);
    a->setTicker(integerTicker());
  }

  map_ = new QCPColorMap(keyAxis, queryAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(true);
  map_->setColorScale(scale_);
  scale_->setGradient(viridisGradient());
  scale_->setBarWidth(14);
  styleAxis(scale_->axis(), tr("A_ij  (attention scale, A = n·P)"));

  // Column sums over the map's key axis; row sums over its query axis (horizontal bars).
  QCPAxis* colKeys = colSumRect_->axis(QCPAxis::atBottom);
  QCPAxis* colValues = colSumRect_->axis(QCPAxis::atLeft);
  styleAxis(colValues, tr("col sum"));
  colKeys->setTickLabels(false);
  colSums_ = makeSumBars(colKeys, colValues, colColor());
  colTarget_ = makeTargetLine(colKeys, colValues);

  QCPAxis* rowKeys = rowSumRect_->axis(QCPAxis::atLeft);
  QCPAxis* rowValues = rowSumRect_->axis(QCPAxis::atBottom);
  styleAxis(rowValues, tr("row sum"));
  rowKeys->setTickLabels(false);
  rowKeys->setRangeReversed(true);
  rowSums_ = makeSumBars(rowKeys, rowValues, rowColor());
  rowTarget_ = makeTargetLine(rowKeys, rowValues);
  // Two ticks (0 and about the target) keep the narrow sum axes legible.
  for (QCPAxis* a : {colValues, rowValues}) {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    a->setTicker(ticker);
    a->grid()->setVisible(true);
  }

  connect(keyAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), colKeys,
          qOverload<const QCPRange&>(&QCPAxis::setRange));
  connect(queryAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), rowKeys,
          qOverload<const QCPRange&>(&QCPAxis::setRange));
}

void PlanHeatmapView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  const OperatorRun* run = primaryRun(result_.get());
  if (!run) return;
  const Plan<double>& plan = run->result.plan;
  const int limit = poolAbove_->value();
  if (std::max(plan.rows(), plan.cols()) > limit)
    pooled_ = plan.pooled(limit, limit);
  else
    pooled_.reset();
  QString heading = tr("Attention plan A = n·P  —  %1").arg(operatorCaption(run->spec));
  if (pooled_) {
    const double perBlock = double(plan.rows()) * double(plan.cols()) / double(pooled_->mean.size());
    // On a line of its own: beside the operator's caption it ran past the edges of an exported figure.
    heading += tr("\n[pooled: %1 over %2 × %3 blocks, about %4 entries each]")
                   .arg(poolMax() ? tr("block max") : tr("block mean"))
                   .arg(pooled_->mean.rows())
                   .arg(pooled_->mean.cols())
                   .arg(perBlock, 0, 'f', 0);
  }
  heading_->setText(heading);
  fillMap();
  fillSums();
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(result_->requestId);
}

void PlanHeatmapView::fillMap() {
  const OperatorRun* run = primaryRun(result_.get());
  if (!run) return;
  // Every entry, or one cell per display tile placed at its block's centre in token coordinates.
  const MatD& A = pooled_ ? (poolMax() ? pooled_->max : pooled_->mean) : run->result.plan.dense();
  const int nq = int(run->result.plan.rows()), nk = int(run->result.plan.cols());
  QCPColorMapData* data = map_->data();
  data->setSize(int(A.cols()), int(A.rows()));
  if (pooled_)
    data->setRange(QCPRange(blockCentre(pooled_->colStarts, 0), blockCentre(pooled_->colStarts, A.cols() - 1)),
                   QCPRange(blockCentre(pooled_->rowStarts, 0), blockCentre(pooled_->rowStarts, A.rows() - 1)));
  else
    data->setRange(QCPRange(0, std::max(nk - 1, 0)), QCPRange(0, std::max(nq - 1, 0)));
  if (A.size() == 0) return;

  const double top = std::max(A.maxCoeff(), 1e-300);
  // A map with negative entries (diff: softmax − λ·softmax) gets a diverging scale symmetric about 0, so the sign
  // of each entry is its hue; a log scale has no place for them, so its toggle rests until a plan without any.
  const double lowest = A.minCoeff();
  const bool signedMap = lowest < 0;
  logToggle_->setEnabled(!signedMap);
  logToggle_->setToolTip(signedMap ? tr("This plan has negative entries: they are drawn on a linear scale symmetric "
                                        "about 0 (blue below, red above), which a log scale cannot show")
                                   : logColourTip());
  const bool log = logToggle_->isChecked() && !signedMap;
  // The colour floor is the smallest positive entry, but at most kLogColorDecades below the top.
  double smallest = top;
  for (Eigen::Index e = 0; e < A.size(); ++e)
    if (A.data()[e] > 0) smallest = std::min(smallest, A.data()[e]);
  const double floor = std::max(smallest, top * std::pow(10.0, -kLogColorDecades));
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < A.cols(); ++j) data->setCell(int(j), int(i), log ? std::max(A(i, j), floor) : A(i, j));

  scale_->setGradient(signedMap ? divergingGradient() : viridisGradient());
  scale_->setDataScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (log) scale_->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  else scale_->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
  const double largestMagnitude = std::max(top, -lowest);
  map_->setDataRange(log ? QCPRange(floor, std::max(top, floor * 10))
                         : signedMap ? QCPRange(-largestMagnitude, largestMagnitude) : QCPRange(0, top));
  // Half a cell of padding so the first and last cells are drawn whole.
  map_->keyAxis()->setRange(-0.5, nk - 0.5);
  map_->valueAxis()->setRange(-0.5, nq - 0.5);
}

void PlanHeatmapView::fillSums() {
  const OperatorRun* run = primaryRun(result_.get());
  if (!run || run->result.plan.size() == 0) return;
  const PlanResult<double>& r = run->result;
  auto fill = [](QCPBars* bars, QCPGraph* target, const VecD& sums, const VecD& goal) {
    QVector<double> keys(int(sums.size())), values(int(sums.size())), goals(int(goal.size()));
    for (int k = 0; k < sums.size(); ++k) keys[k] = k, values[k] = sums[k];
    for (int k = 0; k < goal.size(); ++k) goals[k] = goal[k];
    bars->setData(keys, values, true);
    if (goal.size() == sums.size()) target->setData(keys, goals, true);
    else target->data()->clear();
    const double hi = std::max(values.isEmpty() ? 1.0 : *std::max_element(values.begin(), values.end()),
                               goals.isEmpty() ? 1.0 : *std::max_element(goals.begin(), goals.end()));
    // Sums below 0 (columns of a diff map) extend the axis the other way.
    const double lo = std::min(0.0, values.isEmpty() ? 0.0 : *std::min_element(values.begin(), values.end()));
    bars->valueAxis()->setRange(lo * 1.08, hi * 1.08);
    // A tick step of a power of ten times 1, 2 or 5, at least half the larger end: two or three ticks a side.
    const double half = std::max(hi, -lo) / 2;
    const double magnitude = std::pow(10.0, std::floor(std::log10(half)));
    double step = magnitude;
    for (double m : {1.0, 2.0, 5.0, 10.0})
      if (m * magnitude >= half) { step = m * magnitude; break; }
    bars->valueAxis()->ticker().staticCast<QCPAxisTickerFixed>()->setTickStep(step);
  };
  // Through the plan object: structured and GPU plans give their sums without a dense matrix.
  fill(rowSums_, rowTarget_, r.plan.rowSums(), r.rowTarget);
  fill(colSums_, colTarget_, r.plan.colSums(), r.colTarget);
}

void PlanHeatmapView::onHover(QMouseEvent* event) {
  const OperatorRun* run = primaryRun(result_.get());
  const QPointF pos = event->position();
  if (!run || run->result.plan.size() == 0 || !mapRect_->rect().contains(pos.toPoint())) {
    hover_->clear();
    return;
  }
  const Plan<double>& plan = run->result.plan;
  const int j = int(std::lround(map_->keyAxis()->pixelToCoord(pos.x())));
  const int i = int(std::lround(map_->valueAxis()->pixelToCoord(pos.y())));
  if (i < 0 || j < 0 || i >= plan.rows() || j >= plan.cols()) {
    hover_->clear();
    return;
  }
  QString text;
  if (pooled_) {
    // The block that holds token (i, j): the last start at or before it.
    auto blockOf = [](const std::vector<long long>& starts, int index) {
      return size_t(std::upper_bound(starts.begin(), starts.end(), (long long)index) - starts.begin() - 1);
    };
    const size_t bi = blockOf(pooled_->rowStarts, i), bj = blockOf(pooled_->colStarts, j);
    text = QStringLiteral("queries <b>%1–%2</b> · keys <b>%3–%4</b> · mean <b>%5</b> · max <b>%6</b>")
               .arg(pooled_->rowStarts[bi]).arg(pooled_->rowStarts[bi + 1] - 1)
               .arg(pooled_->colStarts[bj]).arg(pooled_->colStarts[bj + 1] - 1)
               .arg(pooled_->mean(Eigen::Index(bi), Eigen::Index(bj)), 0, 'g', 5)
               .arg(pooled_->max(Eigen::Index(bi), Eigen::Index(bj)), 0, 'g', 5);
  } else {
    text = QStringLiteral("query <b>i = %1</b> · key <b>j = %2</b> · A<sub>ij</sub> = <b>%3</b>")
               .arg(i).arg(j).arg(plan(i, j), 0, 'g', 5);
  }
  hover_->setText(text);
  QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

int PlanHeatmapView::queries() const { return map_->data()->valueSize(); }
int PlanHeatmapView::keys() const { return map_->data()->keySize(); }
double PlanHeatmapView::cellValue(int query, int key) const { return map_->data()->cell(key, query); }
bool PlanHeatmapView::logColor() const { return logToggle_->isChecked(); }
std::pair<double, double> PlanHeatmapView::colourRange() const {
  return {map_->dataRange().lower, map_->dataRange().upper};
}
void PlanHeatmapView::setLogColor(bool on) { logToggle_->setChecked(on); }
int PlanHeatmapView::poolAbove() const { return poolAbove_->value(); }
void PlanHeatmapView::setPoolAbove(int entries) { poolAbove_->setValue(entries); }
bool PlanHeatmapView::poolMax() const { return poolKind_->currentIndex() == 1; }
void PlanHeatmapView::setPoolMax(bool on) { poolKind_->setCurrentIndex(on ? 1 : 0); }

nlohmann::json PlanHeatmapView::saveState() const {
  return {{"logColor", logToggle_->isChecked()}, {"poolAbove", poolAbove()}, {"poolMax", poolMax()}};
}

void PlanHeatmapView::restoreState(const nlohmann::json& state) {
  setLogColor(stateValue(state, "logColor", false));
  setPoolAbove(stateValue(state, "poolAbove", kDefaultPoolAbove));
  setPoolMax(stateValue(state, "poolMax", false));
}

void PlanHeatmapView::exportFigure(const std::string& path, const std::string& format,
                                   const ExportSettings& settings) const {
  exportPlot(*plot_, path, format, settings);
}

}  // namespace tl
