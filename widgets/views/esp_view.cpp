#include "widgets/views/esp_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

#include "cuda/tile_index.h"
#include "ops/esp/esp.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

constexpr long long kSliceCells = 512;  // display blocks per side of a slice's permutation plan

}  // namespace

EspView::EspView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  sliceBox_ = new QSpinBox(content);
  sliceBox_->setObjectName("espSlice");
  sliceBox_->setToolTip(tr("Slice whose permutation plan is shown (or click its bar)"));
  readout_ = new QLabel(content);
  readout_->setObjectName("espReadout");
  readout_->setTextFormat(Qt::RichText);
  bar->addWidget(new QLabel(tr("slice l"), content));
  bar->addWidget(sliceBox_);
  bar->addSpacing(12);
  bar->addWidget(readout_, 1);
  layout->addLayout(bar);

  QCPLayoutGrid* grid = makePlot(content, tr("ESP slices"), QSize(420, 240), captionFont());

  barRect_ = new QCPAxisRect(plot_);
  grid->addElement(0, 0, barRect_);
  QCPAxis* x = barRect_->axis(QCPAxis::atBottom);
  QCPAxis* w = barRect_->axis(QCPAxis::atLeft);
  QCPAxis* d = barRect_->axis(QCPAxis::atRight);
  d->setVisible(true);
  styleAxis(x, tr("slice l  (click a bar)"));
  styleAxis(w, tr("weight w_l"));
  styleAxis(d, tr("slice cost D_l"));
  d->setLabelColor(colColor());
  d->setTickLabelColor(colColor());
  x->setTicker(integerTicker());
  x->grid()->setVisible(false);
  weights_ = makeIndexBars(x, w, rowColor());
  weights_->setName(tr("w_l"));
  picked_ = makeIndexBars(x, w, QColor(200, 30, 30));
  costs_ = new QCPGraph(x, d);
  costs_->setLineStyle(QCPGraph::lsNone);
  costs_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colColor(), colColor(), 6));

  slicePlan_ = addMatrixMap(plot_, grid, 0, 1, tr("query i"), tr("key j"), viridisGradient());
  grid->setColumnStretchFactors({1.6, 1});
  grid->setColumnSpacing(14);
  layout->addWidget(plot_, 1);
  setContent(content);

  connect(sliceBox_, &QSpinBox::valueChanged, this, [this](int l) {
    wantedSlice_ = l;
    drawSlice();
    plot_->replot();
  });
  connect(plot_, &QCustomPlot::mousePress, this, &EspView::onPlotClick);
}

void EspView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  const OperatorRun* run = primaryRunOf(result_.get(), "esp");
  if (!run) {
    showMessage(otherFamilyMessage("esp", result_.get()));
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  const MatD w = extra(*run, EspExtras::weights), D = extra(*run, EspExtras::costs);
  if (w.size() == 0) {
    showMessage(tr("This ESP result carries no slice weights."));
    emit redrawn(result_->requestId);
    return;
  }
  showContent();
  heading_->setText(tr("Slice weights and slice plans  —  %1").arg(operatorCaption(run->spec)));
  fillIndexBars(weights_, w.col(0));
  QVector<double> keys, costs;
  for (Eigen::Index l = 0; l < D.rows(); ++l) keys << double(l), costs << D(l, 0);
  costs_->setData(keys, costs, true);
  if (D.size()) {
    const double lo = D.minCoeff(), hi = D.maxCoeff(), pad = std::max((hi - lo) * 0.1, 1e-12 + std::abs(hi) * 0.05);
    costs_->valueAxis()->setRange(lo - pad, hi + pad);
  }
  {
    const QSignalBlocker block(sliceBox_);
    sliceBox_->setRange(0, int(w.rows()) - 1);
    sliceBox_->setValue(std::clamp(wantedSlice_, 0, int(w.rows()) - 1));
  }
  drawSlice();
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(result_->requestId);
}

void EspView::drawSlice() {
  const OperatorRun* run = primaryRunOf(result_.get(), "esp");
  if (!run) return;
  const MatD w = extra(*run, EspExtras::weights), D = extra(*run, EspExtras::costs);
  const MatD matchings = extra(*run, EspExtras::matchings);
  const int l = sliceBox_->value();
  QVector<double> key{double(l)}, value{l < w.rows() ? w(l, 0) : 0.0};
  picked_->setData(key, value, true);

  const Eigen::Index nq = matchings.cols();
  Eigen::Index nk = result_->input ? result_->input->nKeys() : run->result.plan.cols();
  if (nk <= 0) nk = matchings.size() ? Eigen::Index(matchings.maxCoeff()) + 1 : 0;
  // On at most kSliceCells² display blocks: a cell is 1 when its block holds a match, so the permutation stays
  // visible (and exact up to kSliceCells tokens) at any n.
  const long long rowBlocks = cuda::displayBlocks(nq, kSliceCells), colBlocks = cuda::displayBlocks(nk, kSliceCells);
  MatD A = MatD::Zero(rowBlocks, colBlocks);
  if (l < matchings.rows())
    for (Eigen::Index i = 0; i < nq; ++i) {
      const auto j = Eigen::Index(std::lround(matchings(l, i)));
      if (j >= 0 && j < nk) A(cuda::blockOf(i, nq, rowBlocks), cuda::blockOf(j, nk, colBlocks)) = 1;  // -1: padded
    }
  fillBlockMap(slicePlan_, A, nq, nk, 0, 1);
  slicePlan_.title->setText(tr("permutation plan of slice l = %1").arg(l));
  readout_->setText(tr("slice <b>l = %1</b> of %2 · w<sub>l</sub> = <b>%3</b> · D<sub>l</sub> = <b>%4</b>")
                        .arg(l).arg(w.rows()).arg(l < w.rows() ? w(l, 0) : NAN, 0, 'g', 4)
                        .arg(l < D.rows() ? D(l, 0) : NAN, 0, 'g', 4));
}

void EspView::onPlotClick(QMouseEvent* event) {
  if (!showingContent() || !barRect_->rect().contains(event->position().toPoint())) return;
  const int l = int(std::lround(barRect_->axis(QCPAxis::atBottom)->pixelToCoord(event->position().x())));
  if (l >= sliceBox_->minimum() && l <= sliceBox_->maximum()) sliceBox_->setValue(l);
}

int EspView::sliceCount() const { return showingContent() ? weights_->data()->size() : 0; }
double EspView::barValue(int slice) const { return weights_->data()->at(slice)->value; }
double EspView::costValue(int slice) const { return costs_->data()->at(slice)->value; }
int EspView::slice() const { return sliceBox_->value(); }
void EspView::setSlice(int slice) {
  wantedSlice_ = slice;
  sliceBox_->setValue(slice);
}

nlohmann::json EspView::saveState() const { return {{"slice", wantedSlice_}}; }
void EspView::restoreState(const nlohmann::json& state) { setSlice(stateValue(state, "slice", 0)); }

}  // namespace tl
