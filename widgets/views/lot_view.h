#pragma once
// LOT internals: the two factor plans P1 (queries × pivots) and P2 (pivots × keys) whose glued product is
// the plan, and the pivot masses as bars. When the primary operator is not LOT the view says so.
#include "widgets/plot/matrix_map.h"
#include "widgets/views/family_view.h"


namespace tl {

class LotView : public FamilyView {
  Q_OBJECT
 public:
  explicit LotView(QWidget* parent = nullptr);

  std::string viewName() const override { return "lot"; }
  QString title() const override { return tr("LOT factors"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;

  const MatrixMap& p1() const { return p1_; }
  const MatrixMap& p2() const { return p2_; }
  int pivotCount() const;
  double pivotMass(int pivot) const;

 private:
  MatrixMap p1_, p2_;
  QCPBars* masses_ = nullptr;
};

}  // namespace tl
