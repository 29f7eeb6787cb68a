#pragma once
// Contraction and bias certificates of banded Sinkhorn (docs/gui.md#certificates,
// docs/operators/banded.md#certificates): the tile grid coloured by ρ_H (n/a tiles hatched), the ρ_H
// histogram, the observed contraction of the iterates against ρ_H, the bias certificate with the certified
// depth R* for the view's tau, the paper's Table-7 summary row and the strip list. The numbers come with the
// result (SessionResult::certificates, computed on the engine's worker thread); changing tau only re-selects R*.
// Exports the figure (PNG/SVG/PDF) and its tables (CSV).
#include <optional>

#include "widgets/plot/matrix_map.h"
#include "widgets/views/family_view.h"

class QComboBox;

namespace tl {

class CertificatesView : public FamilyView {
  Q_OBJECT
 public:
  explicit CertificatesView(QWidget* parent = nullptr);

  std::string viewName() const override { return "certificates"; }
  QString title() const override { return tr("Certificates"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf", "csv"}; }
  void exportFigure(const std::string& path, const std::string& format, const ExportSettings& settings) const override;

  // What is drawn, for tests.
  const MatrixMap& tileMap() const { return tiles_; }  // ρ_H per tile; NaN for n/a and off-support tiles
  int hatchedTiles() const { return hatched_; }
  ContractionSummary summary() const { return summary_; }
  double tau() const { return tau_; }
  void setTau(double tau);
  std::optional<int> selectedDepth() const { return selected_; }
  QString biasText() const;
  std::string tablesCsv() const;

 private:
  void redraw();
  void drawTiles(const ContractionCertificates& c, double eps);
  void drawObserved(const BandedCertificateReport& report, const std::vector<double>& rho);
  void drawBias(const BandedCertificateReport& report);

  double tau_ = 1e-5;
  QComboBox* tauPicker_ = nullptr;
  MatrixMap tiles_;
  QCPBars* histogram_ = nullptr;
  QCPGraph* observed_ = nullptr;
  QCPGraph* rhoLine_ = nullptr;
  QCPTextElement* observedTitle_ = nullptr;
  QCPTextElement* biasTable_ = nullptr;
  QCPTextElement* summaryTable_ = nullptr;
  QCPTextElement* stripTable_ = nullptr;
  std::vector<QCPItemRect*> hatches_;
  int hatched_ = 0;
  ContractionSummary summary_;
  std::optional<int> selected_;
};

}  // namespace tl
