#pragma once
// Compare mode: the plans of operator 1 (primary) and operator 2 side by side on one colour scale, their
// difference A1 − A2 on a diverging scale symmetric about 0, and a table with one row per operator:
// time, marginal errors, entropy, column mass, effective rank (analyzePlan) and the distances to
// operator 1 (comparePlans). With one operator the view says how to turn compare mode on. Its figure
// export is the three heatmaps; the table is on screen and in `tlens compare --csv`.
#include <QStringList>

#include "widgets/plot/matrix_map.h"
#include "widgets/views/family_view.h"

class QTableWidget;

namespace tl {

class CompareView : public FamilyView {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);

  std::string viewName() const override { return "compare"; }
  QString title() const override { return tr("Compare"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;

  // Column keys of the table, in order: "time_ms", "row_err", "col_err", "entropy", "max_col_sum", "gini",
  // "eff_rank", "rel_frobenius", "max_abs", "row_kl", "output_diff".
  static const QStringList& columnKeys();
  // The number in the table (NaN where the cell shows "—"); row = operator index in the session.
  double tableValue(int row, const QString& column) const;
  int tableRows() const;
  const MatrixMap& plan(int which) const { return which == 0 ? first_ : second_; }
  const MatrixMap& difference() const { return diff_; }
  QTableWidget* table() const { return table_; }

 private:
  void fillTable(const SessionResult& result);

  MatrixMap first_, second_, diff_;
  QTableWidget* table_ = nullptr;
};

}  // namespace tl
