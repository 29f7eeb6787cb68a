#pragma once
// ESP internals: the slice weights w_l as bars, with the slice costs D_l on a second axis, and the
// permutation plan of one slice l (A_l(i, matching_l(i)) = 1) as a small heatmap. Clicking a bar or the
// spin box picks l. When the primary operator is not ESP the view says so.
#include "widgets/plot/matrix_map.h"
#include "widgets/views/family_view.h"

class QLabel;
class QSpinBox;

namespace tl {

class EspView : public FamilyView {
  Q_OBJECT
 public:
  explicit EspView(QWidget* parent = nullptr);

  std::string viewName() const override { return "esp"; }
  QString title() const override { return tr("ESP slices"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;

  // What is drawn (tests compare it with the result's extras).
  int sliceCount() const;
  double barValue(int slice) const;   // w_l
  double costValue(int slice) const;  // D_l
  int slice() const;
  void setSlice(int slice);
  const MatrixMap& slicePlan() const { return slicePlan_; }

 private:
  void drawSlice();
  void onPlotClick(QMouseEvent* event);

  int wantedSlice_ = 0;  // restored before a result arrives
  QSpinBox* sliceBox_ = nullptr;
  QLabel* readout_ = nullptr;
  QCPAxisRect* barRect_ = nullptr;
  QCPBars* weights_ = nullptr;
  QCPBars* picked_ = nullptr;  // the chosen slice's bar, highlighted
  QCPGraph* costs_ = nullptr;
  MatrixMap slicePlan_;
};

}  // namespace tl
