#include "widgets/views/lot_view.h"

#include <QVBoxLayout>

#include "widgets/plot/plot_style.h"

namespace tl {

LotView::LotView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  QCPLayoutGrid* grid = makePlot(content, tr("LOT factors"), QSize(420, 240), captionFont());

  p1_ = addMatrixMap(plot_, grid, 0, 0, tr("query i"), tr("pivot k"), viridisGradient());
  p2_ = addMatrixMap(plot_, grid, 0, 1, tr("pivot k"), tr("key j"), viridisGradient());
  auto* massRect = new QCPAxisRect(plot_);
  auto* massCell = new QCPLayoutGrid;
  grid->addElement(0, 2, massCell);
  massCell->addElement(0, 0, new QCPTextElement(plot_, tr("pivot masses"), captionFont()));
  massCell->addElement(1, 0, massRect);
  massCell->setRowStretchFactors({0.01, 1});
  QCPAxis* x = massRect->axis(QCPAxis::atBottom);
  styleAxis(x, tr("pivot k"));
  styleAxis(massRect->axis(QCPAxis::atLeft), tr("mass"));
  x->setTicker(integerTicker());
  x->grid()->setVisible(false);
  masses_ = makeIndexBars(x, massRect->axis(QCPAxis::atLeft), QColor(44, 160, 44));
  grid->setColumnStretchFactors({1, 1, 0.8});
  grid->setColumnSpacing(14);
  layout->addWidget(plot_, 1);
  setContent(content);
}

void LotView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  const OperatorRun* run = primaryRunOf(result_.get(), "lot");
  const MatD P1 = run ? extra(*run, "lot_P1") : MatD(), P2 = run ? extra(*run, "lot_P2") : MatD();
  if (!run) showMessage(otherFamilyMessage("lot", result_.get()));
  else if (P1.size() == 0 || P2.size() == 0) showMessage(tr("This LOT result carries no factor plans."));
  if (!run || P1.size() == 0 || P2.size() == 0) {
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  showContent();
  heading_->setText(tr("Factor plans and pivot masses  —  %1").arg(operatorCaption(run->spec).replace(QChar(0x0a), QChar(0x20))));
  // Each factor on its own scale: their magnitudes differ (P1 rows carry query mass, P2 rows pivot mass).
  fillMatrixMap(p1_, P1, 0, P1.maxCoeff());
  fillMatrixMap(p2_, P2, 0, P2.maxCoeff());
  p1_.title->setText(tr("P1  (%1 × %2)").arg(P1.rows()).arg(P1.cols()));
  p2_.title->setText(tr("P2  (%1 × %2)").arg(P2.rows()).arg(P2.cols()));
  const MatD masses = extra(*run, "lot_pivot_masses");
  fillIndexBars(masses_, masses.size() ? VecD(masses.col(0)) : VecD());
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(result_->requestId);
}

int LotView::pivotCount() const { return showingContent() ? masses_->data()->size() : 0; }
double LotView::pivotMass(int pivot) const { return masses_->data()->at(pivot)->value; }

}  // namespace tl
