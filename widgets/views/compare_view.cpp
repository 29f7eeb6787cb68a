#include "widgets/views/compare_view.h"

#include <QHeaderView>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "analysis/summary.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Column {
  QString key, header, tip;
};

const std::vector<Column>& columns() {
  static const std::vector<Column> cols{
      {"time_ms", "time (ms)", "the operator's own wall time"},
      {"row_err", "row err", "max over rows of |row sum − target| (attention scale)"},
      {"col_err", "col err", "max over columns of |column sum − target| (attention scale)"},
      {"entropy", "entropy", "mean row entropy H_i = −Σ_j A_ij log A_ij"},
      {"max_col_sum", "max col sum", "largest column sum (attention sink)"},
      {"gini", "Gini", "Gini coefficient of the column sums over active keys"},
      {"eff_rank", "eff. rank", "effective rank exp(−Σ p_k log p_k) of the singular values (— above 2048)"},
      {"rel_frobenius", "‖A−A₁‖_F/‖A₁‖_F", "relative Frobenius distance to operator 1"},
      {"max_abs", "max |A−A₁|", "largest entrywise difference to operator 1"},
      {"row_kl", "row KL to 1", "mean over rows of KL(A₁ row ‖ A row)"},
      {"output_diff", "‖O−O₁‖/‖O₁‖", "relative difference of the outputs A V (needs V)"},
  };
  return cols;
}

QTableWidgetItem* numberItem(double value) {
  auto* item = new QTableWidgetItem(std::isnan(value) ? QStringLiteral("—") : QString::number(value, 'g', 4));
  item->setData(Qt::UserRole, value);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  return item;
}

}  // namespace

CompareView::CompareView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QSplitter(Qt::Vertical, this);
  QCPLayoutGrid* grid = makePlot(content, tr("Compare"), QSize(480, 200), QFont("DejaVu Sans", 8));
  first_ = addMatrixMap(plot_, grid, 0, 0, tr("query i"), tr("key j"), viridisGradient());
  second_ = addMatrixMap(plot_, grid, 0, 1, tr("query i"), tr("key j"), viridisGradient());
  diff_ = addMatrixMap(plot_, grid, 0, 2, tr("query i"), tr("key j"), divergingGradient());
  grid->setColumnSpacing(16);

  table_ = new QTableWidget(content);
  table_->setObjectName("compareTable");
  table_->setColumnCount(int(columns().size()));
  for (int c = 0; c < int(columns().size()); ++c) {
    auto* header = new QTableWidgetItem(columns()[c].header);
    header->setToolTip(columns()[c].tip);
    table_->setHorizontalHeaderItem(c, header);
  }
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setAlternatingRowColors(true);
  content->addWidget(plot_);
  content->addWidget(table_);
  content->setStretchFactor(0, 4);
  content->setStretchFactor(1, 1);
  setContent(content);
}

const QStringList& CompareView::columnKeys() {
  static const QStringList keys = [] {
    QStringList k;
    for (const Column& c : columns()) k << c.key;
    return k;
  }();
  return keys;
}

void CompareView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  if (!result_ || result_->runs.size() < 2) {
    showMessage(tr("Compare mode is off.\nTick \"compare with a second operator\" in the Operator panel to run "
                   "a second operator on the same input and compare the two plans here."));
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  const OperatorRun& a = result_->runs[0];
  const OperatorRun& b = result_->runs[1];
  const MatD& A1 = a.result.plan;
  const MatD& A2 = b.result.plan;
  if (A1.size() == 0 || A2.size() == 0 || A1.rows() != A2.rows() || A1.cols() != A2.cols()) {
    showMessage(tr("The two plans cannot be compared entry by entry: %1 is %2 × %3, %4 is %5 × %6 "
                   "(a lazy run forms no plan).")
                    .arg(operatorCaption(a.spec)).arg(A1.rows()).arg(A1.cols())
                    .arg(operatorCaption(b.spec)).arg(A2.rows()).arg(A2.cols()));
    emit redrawn(result_->requestId);
    return;
  }
  showContent();
  const OperatorRegistry& registry = OperatorRegistry::builtin();
  const QString t1 = QString::fromStdString(registry.get(a.spec.family).title);
  const QString t2 = QString::fromStdString(registry.get(b.spec.family).title);
  // One line per operator (the dock is wide; wrapped captions would take the heatmaps' height).
  heading_->setText(tr("1 = %1\n2 = %2").arg(operatorCaption(a.spec).replace('\n', ' '),
                                              operatorCaption(b.spec).replace('\n', ' ')));

  // One scale for both plans, so equal colours mean equal attention; the difference is symmetric about 0. A plan
  // with negative entries (diff) puts both on a diverging scale symmetric about 0, as the plan heatmap does, so
  // that 0 is one colour and the sign of an entry its hue.
  const double lo = std::min(A1.minCoeff(), A2.minCoeff());
  const double hi = std::max(A1.maxCoeff(), A2.maxCoeff());
  const bool signedPlans = lo < 0;
  const double largest = std::max(hi, -lo);
  for (MatrixMap* map : {&first_, &second_})
    map->scale->setGradient(signedPlans ? divergingGradient() : viridisGradient());
  fillMatrixMap(first_, A1, signedPlans ? -largest : 0.0, signedPlans ? largest : hi);
  fillMatrixMap(second_, A2, signedPlans ? -largest : 0.0, signedPlans ? largest : hi);
  const MatD D = A1 - A2;
  const double m = std::max(D.cwiseAbs().maxCoeff(), 1e-300);
  fillMatrixMap(diff_, D, -m, m);
  first_.title->setText(tr("1: %1").arg(t1));
  second_.title->setText(tr("2: %1").arg(t2));
  diff_.title->setText(tr("A₁ − A₂  (max |Δ| = %1)").arg(m, 0, 'g', 3));
  fillTable(*result_);
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(result_->requestId);
}

void CompareView::fillTable(const SessionResult& result) {
  table_->setRowCount(int(result.runs.size()));
  for (int r = 0; r < int(result.runs.size()); ++r) {
    const OperatorRun& run = result.runs[r];
    if (!run.analysis) continue;  // not a compare session
    const PlanAnalysis& an = *run.analysis;
    const std::optional<PlanComparison>& cmp = run.toFirst;
    const double values[] = {
        an.seconds * 1e3,
        an.errors.rowMax,
        an.errors.colMax,
        an.entropy.mean,
        an.columnMass.maxSum,
        an.columnMass.gini,
        an.rank ? an.rank->effective : kNaN,
        cmp ? cmp->relativeFrobenius : kNaN,
        cmp ? cmp->maxAbs : kNaN,
        cmp ? cmp->meanRowKl : kNaN,
        cmp && cmp->outputDifference ? *cmp->outputDifference : kNaN,
    };
    auto* header = new QTableWidgetItem(
        QStringLiteral("%1: %2").arg(r + 1).arg(QString::fromStdString(OperatorRegistry::builtin().get(run.spec.family).title)));
    header->setToolTip(operatorCaption(run.spec));
    table_->setVerticalHeaderItem(r, header);
    for (int c = 0; c < int(columns().size()); ++c) table_->setItem(r, c, numberItem(values[c]));
  }
  // The table is as tall as its rows, so the heatmaps keep the rest.
  int height = table_->horizontalHeader()->sizeHint().height() + 2 * table_->frameWidth();
  for (int r = 0; r < table_->rowCount(); ++r) height += table_->verticalHeader()->sectionSizeHint(r);
  table_->setMaximumHeight(height + 2);
}

int CompareView::tableRows() const { return showingContent() ? table_->rowCount() : 0; }

double CompareView::tableValue(int row, const QString& column) const {
  const int c = int(columnKeys().indexOf(column));
  const QTableWidgetItem* item = (c >= 0 && row >= 0 && row < table_->rowCount()) ? table_->item(row, c) : nullptr;
  return item ? item->data(Qt::UserRole).toDouble() : kNaN;
}

}  // namespace tl
