#pragma once
// Rank decay (docs/gui.md#rank-decay): how fast attention paths and layer outputs lose rank for the
// session's operators, on a synthetic stack, random matrices or a checkpoint. Six panels in one figure:
// σ₂/σ₁ of path products per depth (box plots, log y), ρ_out per layer with a ±1 std band, the absolute
// ‖res(X_ℓ)‖₂ with the theory curves (each labelled; greyed with the reason where its assumptions fail; the
// rigorous bound's local variant as markers per layer), and three strips per layer about the attention
// matrices themselves: marginal error, row entropy, effective rank. One colour per operator; configurations toggled on and off here only
// change what is drawn (the Engine computes every configuration the session lists).
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "rankdecay/settings.h"
#include "widgets/views/view.h"

class QCheckBox;
class QCustomPlot;
class QCPGraph;
class QCPLayoutGrid;
class QCPAxisRect;
class QCPTextElement;
class QLineEdit;
class QSpinBox;
class QLabel;

namespace tl {

class RankDecayView : public View {
  Q_OBJECT
 public:
  explicit RankDecayView(QWidget* parent = nullptr);

  std::string viewName() const override { return "rank_decay"; }
  QString title() const override { return tr("Rank decay"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf", "csv"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;
  std::string exportUnavailableReason() const override;

  // What the session asks for, and whether the session computes it ("live"); the main window calls this
  // when a session is loaded and listens to settingsEdited.
  void setSettings(const rankdecay::RankDecaySettings& settings, bool live);

  // For tests and the CLI's figures: the drawn results, the plot, the configuration toggles.
  const std::vector<rankdecay::RankDecayResult>* curves() const;
  QCustomPlot* plot() const { return plot_; }
  QCheckBox* configToggle(rankdecay::BlockConfig config) const { return configBoxes_[size_t(config)]; }
  // The ρ_out graph of operator `op` under `config` (nullptr when not drawn).
  QCPGraph* outputGraph(size_t op, rankdecay::BlockConfig config) const;
  // The panels, for tests: "paths", "outputs", "theory", "errors", "entropy", "rank".
  QCPAxisRect* panel(const std::string& name) const;

 signals:
  // The user changed the source, seeds or paths, or switched live computing on or off.
  void settingsEdited(const rankdecay::RankDecaySettings& settings, bool live);

 private:
  void rebuild();
  void drawPaths(const rankdecay::RankDecayResult& result, int firstSlot, int slotCount);
  void drawOutputs(const rankdecay::RankDecayResult& result);
  void drawTheory(const rankdecay::RankDecayResult& result);
  void drawMarginalErrors(const rankdecay::RankDecayResult& result);
  void drawAttentionShape(const rankdecay::RankDecayResult& result);
  void emitSettings();
  // Lays out the panels that have something to show (paths, outputs, theory, errors, entropy, effective
  // rank), panelColumns() per row.
  void arrangePanels(const std::vector<bool>& visible);
  int panelColumns() const;
  void resizeEvent(QResizeEvent* event) override;
  bool shown(rankdecay::BlockConfig config) const;

  std::shared_ptr<const SessionResult> result_;
  // The CLI's figures draw a result that no session computed.
  std::shared_ptr<const std::vector<rankdecay::RankDecayResult>> standalone_;
  rankdecay::RankDecaySettings settings_;

  QCheckBox* live_ = nullptr;
  QLineEdit* source_ = nullptr;
  QSpinBox* seeds_ = nullptr;
  QSpinBox* paths_ = nullptr;
  std::vector<QCheckBox*> configBoxes_;
  QCheckBox* logOutputs_ = nullptr;
  QCheckBox* showTheory_ = nullptr;
  QCheckBox* showPrinted_ = nullptr;
  QLabel* note_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* heading_ = nullptr;
  std::map<std::pair<size_t, int>, QCPGraph*> outputGraphs_;  // (operator, config) → ρ_out graph
  QCPLayoutGrid* grid_ = nullptr;
  QCPAxisRect *pathsRect_ = nullptr, *outputsRect_ = nullptr, *theoryRect_ = nullptr, *errorsRect_ = nullptr;
  QCPAxisRect *entropyRect_ = nullptr, *rankRect_ = nullptr;
  std::vector<bool> visiblePanels_ = std::vector<bool>(6, true);
  int arrangedColumns_ = 0;

  friend void writeRankDecayFigure(const rankdecay::RankDecayResult& result, const std::string& path);
};

}  // namespace tl
