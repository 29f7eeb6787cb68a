#include "widgets/views/banded_view.h"

#include <QVBoxLayout>
#include <algorithm>
#include <vector>

#include "common/params.h"
#include "ops/banded/banded.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

constexpr long long kMaskCells = 512;  // display blocks per side of the support mask

}  // namespace

BandedView::BandedView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  QCPLayoutGrid* grid = makePlot(content, tr("Banded support"), QSize(420, 240), captionFont());

  QCPColorGradient twoTone;
  twoTone.setColorStopAt(0, QColor(240, 240, 240));
  twoTone.setColorStopAt(1, QColor(59, 81, 139));
  twoTone.setLevelCount(2);
  mask_ = addMatrixMap(plot_, grid, 0, 0, tr("query i"), tr("key j"), twoTone);

  auto* tileCell = new QCPLayoutGrid;
  grid->addElement(0, 1, tileCell);
  tileTitle_ = new QCPTextElement(plot_, tr("per-tile marginal error"), captionFont());
  auto* tileRect = new QCPAxisRect(plot_);
  tileCell->addElement(0, 0, tileTitle_);
  tileCell->addElement(1, 0, tileRect);
  tileCell->setRowStretchFactors({0.01, 1});
  QCPAxis* x = tileRect->axis(QCPAxis::atBottom);
  QCPAxis* y = tileRect->axis(QCPAxis::atLeft);
  styleAxis(x, tr("tile b"));
  styleAxis(y, tr("max |sum − target|"));
  x->setTicker(integerTicker());
  x->grid()->setVisible(false);
  auto* group = new QCPBarsGroup(plot_);
  rowErrors_ = makeIndexBars(x, y, rowColor());
  colErrors_ = makeIndexBars(x, y, colColor());
  for (QCPBars* b : {rowErrors_, colErrors_}) {
    b->setWidth(0.38);
    b->setBarsGroup(group);
  }
  rowErrors_->setName(tr("rows (queries)"));
  colErrors_->setName(tr("columns (keys)"));
  tileRect->insetLayout()->addElement(new QCPLegend, Qt::AlignTop | Qt::AlignRight);
  auto* legend = static_cast<QCPLegend*>(tileRect->insetLayout()->elementAt(0));
  legend->setFont(QFont("DejaVu Sans", 8));
  legend->setBrush(QColor(255, 255, 255, 220));
  for (QCPBars* b : {rowErrors_, colErrors_}) legend->addItem(new QCPPlottableLegendItem(legend, b));
  grid->setColumnStretchFactors({1, 1});
  grid->setColumnSpacing(14);
  layout->addWidget(plot_, 1);
  setContent(content);
}

void BandedView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  const OperatorRun* run = primaryRunOf(result_.get(), "banded");
  if (!run) {
    showMessage(otherFamilyMessage("banded", result_.get()));
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  showContent();
  const BandedParams params = BandedParams::from(run->spec.params);
  W_ = params.W;
  const int tile = params.tile;
  const int nq = result_->input ? result_->input->nQueries() : int(run->result.plan.rows());
  const int nk = result_->input ? result_->input->nKeys() : int(run->result.plan.cols());
  // A dustbin widens the band to the whole sequence (every token must reach it): the support drawn is the one run.
  const long long halfWidth = systemHalfWidth(params, nq, nk);
  // The support on at most kMaskCells² display blocks: each cell is the share of its block inside the band
  // (0 or 1 when a block is one entry), so the mask stays O(n·cells) to draw at any n.
  const std::vector<long long> rowStarts = displayBlockStarts(nq, kMaskCells), colStarts = displayBlockStarts(nk, kMaskCells);
  MatD share = MatD::Zero(Eigen::Index(rowStarts.size() - 1), Eigen::Index(colStarts.size() - 1));
  double supported = 0;
  for (Eigen::Index r = 0; r < share.rows(); ++r)
    for (long long i = rowStarts[size_t(r)]; i < rowStarts[size_t(r) + 1]; ++i) {
      const long long lo = std::max(0LL, i - halfWidth), hi = std::min<long long>(nk - 1, i + halfWidth);  // row i
      supported += double(std::max(0LL, hi - lo + 1));
      for (Eigen::Index c = 0; c < share.cols(); ++c) {
        const long long inBlock = std::min(hi, colStarts[size_t(c) + 1] - 1) - std::max(lo, colStarts[size_t(c)]) + 1;
        share(r, c) += double(std::max(0LL, inBlock));
      }
    }
  for (Eigen::Index r = 0; r < share.rows(); ++r)
    for (Eigen::Index c = 0; c < share.cols(); ++c)
      share(r, c) /= double((rowStarts[size_t(r) + 1] - rowStarts[size_t(r)]) * (colStarts[size_t(c) + 1] - colStarts[size_t(c)]));
  fillBlockMap(mask_, share, nq, nk, 0, 1);
  // Two colours: the title says which is the support; a coarse block shows as support when half of it is.
  mask_.scale->setVisible(false);
  const QString support = params.dustbin ? tr("support: all pairs (the dustbin widens W = %1 to the sequence)").arg(W_)
                                        : tr("support |i − j| ≤ W = %1").arg(W_);
  mask_.title->setText(tr("%1  (%2 of %3 entries)")
                           .arg(support)
                           .arg(qlonglong(supported))
                           .arg(qlonglong(nq) * qlonglong(nk)));
  heading_->setText(tr("Band mask and per-tile errors  —  %1").arg(operatorCaption(run->spec).replace(QChar(0x0a), QChar(0x20))));
  tileTitle_->setText(tr("per-tile marginal error (tile = %1)").arg(tile));

  const MatD rows = extra(*run, "banded_tile_row_errors"), cols = extra(*run, "banded_tile_col_errors");
  fillIndexBars(rowErrors_, rows.size() ? VecD(rows.col(0)) : VecD());
  fillIndexBars(colErrors_, cols.size() ? VecD(cols.col(0)) : VecD());
  const double hi = std::max(rows.size() ? rows.maxCoeff() : 0.0, cols.size() ? cols.maxCoeff() : 0.0);
  rowErrors_->valueAxis()->setRange(0, hi > 0 ? hi * 1.25 : 1e-12);  // room for the legend
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(result_->requestId);
}

int BandedView::tileCount() const { return showingContent() ? rowErrors_->data()->size() : 0; }
double BandedView::tileRowError(int tile) const { return rowErrors_->data()->at(tile)->value; }
double BandedView::tileColError(int tile) const { return colErrors_->data()->at(tile)->value; }

}  // namespace tl
