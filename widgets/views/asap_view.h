#pragma once
// ASAP / sliced potentials (docs/gui.md#asap-view): when the primary operator is Sinkhorn with T ≥ 2, it is
// the teacher, and the view fits a sliced-potential dual to it on the current input (core: inspectAsap) and
// draws the dual scatter f̂ against f̄ with R², δ and the plan-ratio band e^{±2δ/eps}, one slice's 1-D
// problem (projected queries and keys, the sorted matching, the potential f^θ and the piecewise-linear φ),
// the feature matrix Φ, and the teacher, ASAP and ASAP-0 plans with a log-ratio or difference map; the plans'
// row and column sums with ASAP's B.34 row-error bound η, and a slice sweep (R² and the one-sided KLs against
// their bounds, over the number of slices L). The
// sliders (slices L, λ_B) refit on a worker thread, and only while the view is visible in the main window;
// the figure exports as png/svg/pdf and the duals as csv.
#include <QThreadPool>
#include <memory>

#include "ops/asap/asap_inspection.h"
#include "widgets/plot/matrix_map.h"
#include "widgets/views/family_view.h"

class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;

namespace tl {

class AsapView : public FamilyView {
  Q_OBJECT
 public:
  explicit AsapView(QWidget* parent = nullptr);
  ~AsapView() override;

  std::string viewName() const override { return "asap"; }
  QString title() const override { return tr("ASAP / sliced potentials"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  void finishPending() override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf", "csv"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;

  // What is drawn, for tests: the fit behind the figure (null before one), and R² recomputed from the
  // scatter's own points, 1 − Σ(f̂ − f̄)²/Σ f̄².
  const AsapInspection* inspection() const { return inspection_.get(); }
  // The slice sweep behind the sweep panels: computed after the fit is drawn, on a worker of its own (null until
  // it arrives).
  const SliceSweep* sweep() const { return sweep_.get(); }
  double scatterR2() const;
  int scatterPoints() const;
  const MatrixMap& featureMap() const { return phiMap_; }
  const MatrixMap& comparisonMap() const { return comparisonMap_; }
  const MatrixMap& shortBudgetMap() const { return shortMap_; }
  int shortBudget() const;  // T_b of the baseline shown: 1 or 3
  // The trajectory panel's points (step t, error), cold or warm start.
  std::vector<std::pair<double, double>> trajectory(bool warm) const;
  // The marginal panels' sums (token order) of one plan, and the ASAP row band [1 − η, 1 + η] (empty when not
  // drawn).
  enum class MarginalPlan { Teacher, ShortBudget, Asap, Asap0 };
  std::vector<double> drawnMarginals(bool rows, MarginalPlan plan) const;
  std::vector<double> drawnRowBand() const;
  // The sweep panels' curves, points (L, value).
  enum class SweepCurve { R2, ForwardKl, ReverseKl, VarianceBound, KappaBound, LsSurrogate };
  std::vector<std::pair<double, double>> drawnSweep(SweepCurve curve) const;

 private:
  AsapInspectionSettings wantedSettings(const SinkhornParams& teacher) const;
  void refit();
  void showFit(std::shared_ptr<const AsapInspection> fit, uint64_t requestId);
  void startSweep();
  void drawScatter();
  void drawSlice();
  void drawPlans();
  void drawTrajectories();
  void drawMarginals();
  void drawSweep();
  void updateSliderLabels();

  QSlider* slicesSlider_ = nullptr;
  QSlider* lambdaSlider_ = nullptr;  // log10 λ_B in half decades
  QLabel* slicesLabel_ = nullptr;
  QLabel* lambdaLabel_ = nullptr;
  QComboBox* fitBox_ = nullptr;
  QSpinBox* sliceBox_ = nullptr;
  QComboBox* comparisonBox_ = nullptr;
  QComboBox* shortBudgetBox_ = nullptr;
  QLabel* readout_ = nullptr;

  QCPAxisRect* scatterRect_ = nullptr;
  QCPTextElement* scatterTitle_ = nullptr;
  QCPGraph* scatter_ = nullptr;
  QCPGraph* diagonal_ = nullptr;
  QCPGraph* bandLow_ = nullptr;
  QCPGraph* bandHigh_ = nullptr;
  QCPAxisRect* matchingRect_ = nullptr;
  QCPTextElement* matchingTitle_ = nullptr;
  QCPGraph* queries_ = nullptr;
  QCPGraph* keys_ = nullptr;
  QCPAxisRect* potentialRect_ = nullptr;
  QCPTextElement* potentialTitle_ = nullptr;
  QCPGraph* potentialPoints_ = nullptr;
  QCPGraph* potentialCurve_ = nullptr;
  QCPGraph* interpolant_ = nullptr;
  QCPAxisRect* trajectoryRect_ = nullptr;
  QCPTextElement* trajectoryTitle_ = nullptr;
  QCPGraph* coldStart_ = nullptr;
  QCPGraph* warmStart_ = nullptr;
  QCPAxisRect* marginalRects_[2] = {nullptr, nullptr};  // rows, columns
  QCPTextElement* marginalTitles_[2] = {nullptr, nullptr};
  QCPGraph* marginalGraphs_[2][4] = {};  // [rows / columns][MarginalPlan]
  QCPGraph* rowBandLow_ = nullptr;
  QCPGraph* rowBandHigh_ = nullptr;
  QCPAxisRect* klRect_ = nullptr;
  QCPTextElement* klTitle_ = nullptr;
  QCPAxisRect* r2Rect_ = nullptr;
  QCPTextElement* r2Title_ = nullptr;
  QCPGraph* sweepGraphs_[6] = {};  // [SweepCurve]
  MatrixMap phiMap_, teacherMap_, shortMap_, asapMap_, asap0Map_, comparisonMap_;

  QThreadPool worker_;  // one fit at a time; a newer request drops the queued one
  // The sweep refits the input up to 9 times: on its own thread, so a running sweep never delays a new fit.
  QThreadPool sweepWorker_;
  uint64_t generation_ = 0;
  std::shared_ptr<const AsapInspection> inspection_;
  std::shared_ptr<const SliceSweep> sweep_;  // for inspection_, once computed
  QString sweepError_;                       // why sweep_ is empty, when it failed
  std::shared_ptr<const AttentionInput<double>> fittedInput_;  // the input inspection_ was fitted on
};

}  // namespace tl
