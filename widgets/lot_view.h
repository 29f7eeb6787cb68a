#pragma once
// LOT internals: the two factor plans P1 (queries × pivots) and P2 (pivots × keys) whose glued product is
// the plan, and the pivot masses as bars. When the primary operator is not LOT the view says so.
#include "family_view.h"
#include "matrix_map.h"

class QCustomPlot;

namespace tl {

class LotView : public FamilyView {
  Q_OBJECT
 public:
  explicit LotView(QWidget* parent = nullptr);

  std::string viewName() const override { return "lot"; }
  QString title() const override { return tr("LOT factors"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override { return nlohmann::json::object(); }
  void restoreState(const nlohmann::json&) override {}
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;

  const MatrixMap& p1() const { return p1_; }
  const MatrixMap& p2() const { return p2_; }
  int pivotCount() const;
  double pivotMass(int pivot) const;
  QCustomPlot* plot() const { return plot_; }

 private:
  std::shared_ptr<const SessionResult> result_;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* heading_ = nullptr;
  MatrixMap p1_, p2_;
  QCPBars* masses_ = nullptr;
};

}  // namespace tl
