#pragma once
// The attention plan A (rows = queries i, columns = keys j) as a colour map with its colour scale, and the
// row and column sums as bar plots along the right and top edges, aligned cell for cell with the map.
// Dashed lines mark the operator's declared marginal targets, so a plan that is not doubly stochastic
// shows where. A map with negative entries (diff attention) is coloured on a diverging scale symmetric about 0,
// and its sum axes reach below 0. Hovering a cell reads out i, j and A_ij. Plans larger than a size the user sets
// are drawn as display tiles (the block mean or the block max of A over at most that many blocks per side,
// computed where the plan lives: on the GPU for a CUDA result, ops/transport_plan.h), so the map stays live at
// n = 16k–65k; the heading says that it is pooled and over how many entries.
#include <memory>
#include <optional>
#include <utility>

#include "ops/transport_plan.h"

#include "widgets/views/view.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPBars;
class QCPGraph;
class QCPTextElement;

namespace tl {

class PlanHeatmapView : public View {
  Q_OBJECT
 public:
  explicit PlanHeatmapView(QWidget* parent = nullptr);

  std::string viewName() const override { return "plan"; }
  QString title() const override { return tr("Transport plan"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;

  // What the map holds (tests compare it with the core result). In log mode values below the colour
  // floor are drawn at the floor.
  int queries() const;
  int keys() const;
  double cellValue(int query, int key) const;
  bool logColor() const;
  void setLogColor(bool on);
  // The values at the two ends of the colour scale: [0, max] (or the log floor and max), or [−m, m] with
  // m = max |A_ij| for a map with negative entries, drawn in a diverging gradient.
  std::pair<double, double> colourRange() const;
  // Plans with more than this many queries or keys are drawn pooled, on at most this many blocks a side.
  int poolAbove() const;
  void setPoolAbove(int entries);
  bool pooled() const { return pooled_.has_value(); }
  bool poolMax() const;  // block max instead of block mean
  void setPoolMax(bool on);
  QCustomPlot* plot() const { return plot_; }

 private:
  void buildLayout();
  void fillMap();
  void fillSums();
  void onHover(QMouseEvent* event);

  std::shared_ptr<const SessionResult> result_;
  QCheckBox* logToggle_ = nullptr;
  QSpinBox* poolAbove_ = nullptr;
  QComboBox* poolKind_ = nullptr;
  std::optional<PooledPlan<double>> pooled_;  // the tiles on the map, when the plan is drawn pooled
  QLabel* hover_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* heading_ = nullptr;
  QCPAxisRect* mapRect_ = nullptr;
  QCPAxisRect* colSumRect_ = nullptr;
  QCPAxisRect* rowSumRect_ = nullptr;
  QCPColorMap* map_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  QCPBars* rowSums_ = nullptr;
  QCPBars* colSums_ = nullptr;
  QCPGraph* rowTarget_ = nullptr;
  QCPGraph* colTarget_ = nullptr;
};

}  // namespace tl
