#pragma once
// Banded Sinkhorn internals: the support mask |i − j| ≤ W as a heatmap, and the per-tile marginal errors
// (max |sum − target| over each block of `tile` rows, resp. columns) as bars. When the primary operator
// is not banded the view says so.
#include "widgets/plot/matrix_map.h"
#include "widgets/views/family_view.h"


namespace tl {

class BandedView : public FamilyView {
  Q_OBJECT
 public:
  explicit BandedView(QWidget* parent = nullptr);

  std::string viewName() const override { return "banded"; }
  QString title() const override { return tr("Banded support"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;

  const MatrixMap& mask() const { return mask_; }
  int bandWidth() const { return W_; }  // W of the drawn mask (-1 before a banded result)
  int tileCount() const;
  double tileRowError(int tile) const;
  double tileColError(int tile) const;

 private:
  int W_ = -1;
  QCPTextElement* tileTitle_ = nullptr;
  MatrixMap mask_;
  QCPBars* rowErrors_ = nullptr;
  QCPBars* colErrors_ = nullptr;
};

}  // namespace tl
