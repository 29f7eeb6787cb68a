#pragma once
// Marginal error of the plan after every step t (single normalisations for Sinkhorn): max |row sum − target|
// and max |col sum − target| on a log axis, optionally with the means. Every operator reports errorHistory,
// so new families plot here without view code. Runs of several operators (compare mode) share the axes.
#include <memory>

#include "widgets/views/view.h"

class QCheckBox;
class QCustomPlot;
class QCPTextElement;

namespace tl {

class ConvergenceView : public View {
  Q_OBJECT
 public:
  // Exact zeros (a freshly normalised side) cannot sit on a log axis; they are drawn at this floor.
  static constexpr double kErrorFloor = 1e-17;

  explicit ConvergenceView(QWidget* parent = nullptr);

  std::string viewName() const override { return "convergence"; }
  QString title() const override { return tr("Convergence"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;

  QCustomPlot* plot() const { return plot_; }

 private:
  void rebuild();

  std::shared_ptr<const SessionResult> result_;
  QCheckBox* perSide_ = nullptr;
  QCheckBox* showMeans_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* heading_ = nullptr;
};

}  // namespace tl
