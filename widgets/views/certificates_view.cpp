#include "widgets/views/certificates_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "io/atomic_file.h"
#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

constexpr int kHistogramBins = 20;
constexpr int kMaxHatches = 2500;  // beyond this many n/a tiles they are left blank (the title still counts them)
constexpr int kStripLines = 10;
const double kTaus[] = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8};

QFont tableFont() { return QFont("DejaVu Sans Mono", 8); }

// A titled axis rect in `grid` at (row, column).
QCPAxisRect* addTitledRect(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, QCPTextElement*& title,
                           const QString& text) {
  auto* cell = new QCPLayoutGrid;
  grid->addElement(row, column, cell);
  title = new QCPTextElement(plot, text, captionFont());
  auto* rect = new QCPAxisRect(plot);
  cell->addElement(0, 0, title);
  cell->addElement(1, 0, rect);
  cell->setRowStretchFactors({0.01, 1});
  return rect;
}

// A text block at the top of its cell; the empty element below lets the row grow (a text element alone
// would cap the row at its text height).
QCPTextElement* addTable(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column) {
  auto* cell = new QCPLayoutGrid;
  grid->addElement(row, column, cell);
  auto* text = new QCPTextElement(plot, QString(), tableFont());
  text->setTextFlags(Qt::AlignLeft | Qt::AlignTop);
  cell->addElement(0, 0, text);
  cell->addElement(1, 0, new QCPLayoutElement(plot));
  cell->setRowStretchFactors({0.01, 1});
  return text;
}

// "0.9957" for ordinary values, "1 − 4.7e-16" where ρ has rounded to 1 (errata: never print a bare 1).
QString rhoText(double rho, double oneMinus) {
  if (oneMinus < 1e-4) return QString("1 − %1").arg(oneMinus, 0, 'g', 2);
  return QString::number(rho, 'f', 4);
}

std::string csvNumber(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

}  // namespace

CertificatesView::CertificatesView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("certified depth: first R with ‖c_R‖∞ ≤ tau ="), content));
  tauPicker_ = new QComboBox(content);
  tauPicker_->setObjectName("certificateTau");
  for (double t : kTaus) tauPicker_->addItem(QString::number(t, 'g', 1), t);
  tauPicker_->setCurrentIndex(2);
  controls->addWidget(tauPicker_);
  controls->addStretch(1);
  layout->addLayout(controls);
  connect(tauPicker_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int index) { setTau(tauPicker_->itemData(index).toDouble()); });

  QCPLayoutGrid* grid = makePlot(content, tr("Certificates"), QSize(760, 560), captionFont());
  QCPColorGradient gradient = viridisGradient();
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  tiles_ = addMatrixMap(plot_, grid, 0, 0, tr("query tile"), tr("key tile"), gradient);
  tiles_.map->setTightBoundary(false);  // a few large tiles: every cell drawn whole

  QCPTextElement* histogramTitle = nullptr;
  QCPAxisRect* hist = addTitledRect(plot_, grid, 0, 1, histogramTitle, tr("ρ_H histogram (positive blocks)"));
  styleAxis(hist->axis(QCPAxis::atBottom), tr("ρ_H"));
  styleAxis(hist->axis(QCPAxis::atLeft), tr("blocks"));
  hist->axis(QCPAxis::atBottom)->setRange(0, 1);
  histogram_ = makeIndexBars(hist->axis(QCPAxis::atBottom), hist->axis(QCPAxis::atLeft), rowColor());
  histogram_->setWidth(1.0 / kHistogramBins);

  QCPAxisRect* obs = addTitledRect(plot_, grid, 1, 0, observedTitle_, tr("observed contraction"));
  styleAxis(obs->axis(QCPAxis::atBottom), tr("full step t"));
  obs->axis(QCPAxis::atBottom)->setTicker(integerTicker());  // steps are whole numbers
  styleAxis(obs->axis(QCPAxis::atLeft), tr("ρ_obs(t)"));
  observed_ = plot_->addGraph(obs->axis(QCPAxis::atBottom), obs->axis(QCPAxis::atLeft));
  observed_->setPen(QPen(rowColor(), 1.4));
  observed_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
  rhoLine_ = plot_->addGraph(obs->axis(QCPAxis::atBottom), obs->axis(QCPAxis::atLeft));
  rhoLine_->setPen(QPen(colColor(), 1.4, Qt::DashLine));

  biasTable_ = addTable(plot_, grid, 1, 1);
  summaryTable_ = addTable(plot_, grid, 2, 0);
  stripTable_ = addTable(plot_, grid, 2, 1);
  grid->setRowStretchFactors({1, 0.75, 0.3});
  grid->setColumnStretchFactors({1, 1});
  grid->setColumnSpacing(14);
  layout->addWidget(plot_, 1);
  setContent(content);
}

void CertificatesView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  const OperatorRun* run = primaryRunOf(result_.get(), "banded");
  if (!run || !result_->certificates) {
    // Skipped: the window computes them only while this view is on screen, and asks again when it comes up.
    showMessage(!run                            ? otherFamilyMessage("banded", result_.get())
                : result_->certificatesSkipped ? tr("The certificates are computed while this tab is on screen: "
                                                    "computing them now (export once they are drawn).")
                                               : tr("This result has no certificates."));
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  showContent();
  redraw();
  emit redrawn(result_->requestId);
}

void CertificatesView::redraw() {
  const BandedCertificateReport& report = *result_->certificates;
  const OperatorRun& run = result_->runs.front();
  const double eps = report.eps;
  summary_ = summarizeContraction(*report.contraction, eps);
  heading_->setText(tr("Contraction and bias certificates  —  %1")
                        .arg(operatorCaption(run.spec).replace(QChar(0x0a), QChar(0x20))));
  drawTiles(*report.contraction, eps);

  std::vector<double> rho;
  const auto& blocks = summary_.granularity == "strips" ? report.contraction->strips : report.contraction->tiles;
  for (const CertificateBlock& b : blocks)
    if (b.positive) rho.push_back(b.at(eps).rhoH);
  VecD counts = VecD::Zero(kHistogramBins);
  for (double r : rho) counts(std::min(kHistogramBins - 1, int(r * kHistogramBins))) += 1;
  QVector<double> keys(kHistogramBins), values(kHistogramBins);
  for (int b = 0; b < kHistogramBins; ++b) keys[b] = (b + 0.5) / kHistogramBins, values[b] = counts(b);
  histogram_->setData(keys, values, true);
  histogram_->valueAxis()->setRange(0, std::max(1.0, counts.maxCoeff() * 1.15));

  drawObserved(report, rho);
  drawBias(report);

  summaryTable_->setText(tr("Table 7 (%1 positive %2, eps = %3)\n"
                            "ρ_H      median %4 · P95 %5 · max %6\n"
                            "ρ_range  median %7 · max %8")
                             .arg(summary_.blocks)
                             .arg(QString::fromStdString(summary_.granularity))
                             .arg(eps, 0, 'g', 4)
                             .arg(summary_.medianRhoH, 0, 'f', 4)
                             .arg(summary_.p95RhoH, 0, 'f', 4)
                             .arg(summary_.maxRhoH, 0, 'f', 4)
                             .arg(summary_.medianRhoRange, 0, 'f', 4)
                             .arg(summary_.maxRhoRange, 0, 'f', 4));
  QStringList strips{tr("strips: rows × all active keys%1 (n/a: not strictly positive)")
                         .arg(report.contraction->dustbin ? tr(" + dustbin key") : "")};
  const auto& list = report.contraction->strips;
  for (size_t s = 0; s < list.size() && int(s) < kStripLines; ++s) {
    const CertificateBlock& b = list[s];
    QString line = QString("rows %1–%2: ").arg(b.row0).arg(b.row1 - 1);
    if (b.positive) {
      const Contraction c = b.at(eps);
      line += QString("ρ_H = %1, ρ_range = %2").arg(rhoText(c.rhoH, c.oneMinusRhoH)).arg(rhoText(c.rhoRange, c.oneMinusRhoRange));
    } else {
      line += tr("n/a");
      for (const CertificateBlock& core : report.contraction->cores)
        if (core.row0 == b.row0) {
          const Contraction c = core.at(eps);
          line += tr("; core keys %1–%2: ρ_H %3").arg(core.col0).arg(core.col1 - 1).arg(rhoText(c.rhoH, c.oneMinusRhoH));
        }
    }
    strips << line;
  }
  if (int(list.size()) > kStripLines) strips << tr("… %1 more (all in the CSV export)").arg(list.size() - kStripLines);
  stripTable_->setText(strips.join('\n'));
  plot_->replot(QCustomPlot::rpQueuedRefresh);
}

void CertificatesView::drawTiles(const ContractionCertificates& c, double eps) {
  const int B = c.tile;
  const Eigen::Index rows = (c.queries + B - 1) / B, cols = (c.keys + B - 1) / B;
  MatD cells = MatD::Constant(rows, cols, std::nan(""));
  for (QCPItemRect* item : hatches_) plot_->removeItem(item);
  hatches_.clear();
  int interior = 0, na = 0;
  QCPAxis* x = tiles_.map->keyAxis();
  QCPAxis* y = tiles_.map->valueAxis();
  for (const CertificateBlock& b : c.tiles) {
    const Eigen::Index I = b.row0 / B, J = b.col0 / B;
    if (b.positive) {
      cells(I, J) = b.at(eps).rhoH;
      ++interior;
      continue;
    }
    ++na;
    if (int(hatches_.size()) >= kMaxHatches) continue;
    auto* hatch = new QCPItemRect(plot_);
    hatch->setClipAxisRect(tiles_.rect);
    for (QCPItemPosition* p : {hatch->topLeft, hatch->bottomRight}) p->setAxes(x, y);
    hatch->topLeft->setCoords(double(J) - 0.5, double(I) - 0.5);
    hatch->bottomRight->setCoords(double(J) + 0.5, double(I) + 0.5);
    hatch->setPen(QPen(QColor(140, 140, 140), 0.6));
    hatch->setBrush(QBrush(QColor(120, 120, 120), Qt::BDiagPattern));
    hatches_.push_back(hatch);
  }
  hatched_ = int(hatches_.size());
  fillMatrixMap(tiles_, cells, 0, 1);
  tiles_.title->setText(tr("ρ_H per tile (B = %1): %2 interior, %3 n/a hatched").arg(B).arg(interior).arg(na));
}

void CertificatesView::drawObserved(const BandedCertificateReport& report, const std::vector<double>& rho) {
  QVector<double> t, value;
  for (size_t k = 0; k < report.observed.size(); ++k)
    if (report.observed[k]) t << double(k + 1), value << *report.observed[k];
  observed_->setData(t, value, true);
  const double steps = std::max<double>(2, double(report.observed.size()));
  // The certificate the iterates can be held to: the whole support when it is positive; otherwise the largest
  // block ρ_H, which is local and does not bound the banded iteration (docs/operators/banded.md#certificates).
  const bool whole = report.contraction->whole.has_value();
  const double level = whole ? report.contraction->whole->at(report.eps).rhoH
                             : (rho.empty() ? std::nan("") : *std::max_element(rho.begin(), rho.end()));
  rhoLine_->setData(QVector<double>{1, steps}, QVector<double>{level, level}, true);
  const QString reference = whole ? tr("ρ_H of the whole support") : tr("max block ρ_H (local only)");
  observed_->keyAxis()->setRange(0.5, steps + 0.5);
  observed_->valueAxis()->setRange(0, 1.05);
  const size_t converged = size_t(std::count(report.observed.begin(), report.observed.end(), std::nullopt));
  observedTitle_->setText(tr("observed ρ_obs(t) = osc(v⁽ᵗ⁺¹⁾ − v⁽ᵗ⁾)/osc(v⁽ᵗ⁾ − v⁽ᵗ⁻¹⁾) (dots) vs %1 (dashed)%2")
                              .arg(reference)
                              .arg(converged ? tr("; %1 converged steps not shown").arg(converged) : QString()));
}

void CertificatesView::drawBias(const BandedCertificateReport& report) {
  selected_.reset();
  if (!report.bias) {
    biasTable_->setText(tr("bias certificate: %1").arg(QString::fromStdString(report.biasNote)));
    return;
  }
  std::vector<BiasRow> rows = report.bias->rows;
  std::sort(rows.begin(), rows.end(), [](const BiasRow& a, const BiasRow& b) { return a.R < b.R; });
  for (const BiasRow& r : rows)
    if (r.cInf <= tau_) {
      selected_ = r.R;
      break;
    }
  QStringList lines{tr("bias certificate, mean loss <Z, O>/(n·d_v), Z ~ N(0,1) seed 0"), tr("tau = %1").arg(tau_, 0, 'g', 2),
                    "  R  ‖η_R‖₂     ‖c_R‖∞     |Δg_R|∞    residual"};
  for (const BiasRow& r : rows)
    lines << QString::asprintf("%s%2d  %9.3e  %9.3e  %9.3e  %9.2e%s", selected_ == r.R ? "▶" : " ", r.R, r.etaNorm2,
                               r.cInf, r.gapInf, r.residual, selected_ == r.R ? "  ◀ R*" : "");
  lines << (selected_ ? tr("R* = %1: within tau of full backprop").arg(*selected_)
                      : tr("uncertified: no listed R has ‖c_R‖∞ ≤ tau"));
  biasTable_->setText(lines.join('\n'));
}

void CertificatesView::setTau(double tau) {
  if (!(tau > 0)) return;
  tau_ = tau;
  const int index = tauPicker_->findData(tau);
  if (index >= 0 && index != tauPicker_->currentIndex()) tauPicker_->setCurrentIndex(index);
  if (showingContent() && result_ && result_->certificates) {
    drawBias(*result_->certificates);
    plot_->replot(QCustomPlot::rpQueuedRefresh);
  }
}

QString CertificatesView::biasText() const { return biasTable_->text(); }

nlohmann::json CertificatesView::saveState() const { return {{"tau", tau_}}; }

void CertificatesView::restoreState(const nlohmann::json& state) { setTau(stateValue(state, "tau", 1e-5)); }

std::string CertificatesView::tablesCsv() const {
  if (!result_ || !result_->certificates) return {};
  const BandedCertificateReport& report = *result_->certificates;
  std::ostringstream out;
  out << "# blocks (eps = " << csvNumber(report.eps) << ", tile = " << report.contraction->tile << ")\n"
      << "kind,row0,row1,col0,col1,positive,delta,rho_h,one_minus_rho_h,rho_range,one_minus_rho_range\n";
  auto blocks = [&](const char* kind, const std::vector<CertificateBlock>& list) {
    for (const CertificateBlock& b : list) {
      out << kind << ',' << b.row0 << ',' << b.row1 << ',' << b.col0 << ',' << b.col1 << ',' << (b.positive ? 1 : 0);
      if (b.positive) {
        const Contraction c = b.at(report.eps);
        for (double x : {c.delta, c.rhoH, c.oneMinusRhoH, c.rhoRange, c.oneMinusRhoRange}) out << ',' << csvNumber(x);
      } else {
        out << ",,,,,";
      }
      out << '\n';
    }
  };
  blocks("tile", report.contraction->tiles);
  blocks("strip", report.contraction->strips);
  blocks("core", report.contraction->cores);
  out << "\n# summary (Table 7)\ngranularity,blocks,median_rho_h,p95_rho_h,max_rho_h,median_rho_range,max_rho_range\n"
      << summary_.granularity << ',' << summary_.blocks << ',' << csvNumber(summary_.medianRhoH) << ','
      << csvNumber(summary_.p95RhoH) << ',' << csvNumber(summary_.maxRhoH) << ',' << csvNumber(summary_.medianRhoRange)
      << ',' << csvNumber(summary_.maxRhoRange) << "\n\n# observed contraction\nt,rho_obs\n";
  for (size_t k = 0; k < report.observed.size(); ++k)
    out << k + 1 << ',' << (report.observed[k] ? csvNumber(*report.observed[k]) : "converged") << '\n';
  if (report.bias) {
    out << "\n# bias certificate (tau = " << csvNumber(tau_) << ")\nR,eta_norm2,c_inf,gap_inf,residual,selected\n";
    for (const BiasRow& r : report.bias->rows)
      out << r.R << ',' << csvNumber(r.etaNorm2) << ',' << csvNumber(r.cInf) << ',' << csvNumber(r.gapInf) << ','
          << csvNumber(r.residual) << ',' << (selected_ == r.R ? 1 : 0) << '\n';
  }
  return out.str();
}

void CertificatesView::exportFigure(const std::string& path, const std::string& format,
                                    const ExportSettings& settings) const {
  if (format == "csv") writeFileAtomically(path, tablesCsv());
  else FamilyView::exportFigure(path, format, settings);
}

}  // namespace tl
