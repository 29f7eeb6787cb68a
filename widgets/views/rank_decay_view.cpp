#include "widgets/views/rank_decay_view.h"

#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "rankdecay/result_json.h"
#include "widgets/plot/plot_export.h"
#include "widgets/plot/plot_style.h"
#include "widgets/views/rank_decay_figure.h"

namespace tl {
namespace {

using rankdecay::BlockConfig;

// Exact zeros and values below the double range's comfortable end cannot sit on a log axis.
constexpr double kFloor = 1e-17;
constexpr double kTheoryFloor = 1e-300;

// Panels per row: three in a wide view (a bottom dock across the window, the exported figure), else two.
constexpr int kThreeColumnWidth = 1000;
// Height one row of panels needs to keep its axis labels legible, and what the heading and legend take.
constexpr int kPanelHeight = 250;
constexpr int kChromeHeight = 150;

// One colour per operator (the categorical palette of matplotlib, which the papers' figures use).
QColor operatorColor(size_t index) {
  static const QColor palette[] = {QColor(31, 119, 180), QColor(214, 39, 40),  QColor(44, 160, 44),
                                   QColor(148, 103, 189), QColor(255, 127, 14), QColor(140, 86, 75),
                                   QColor(227, 119, 194), QColor(23, 190, 207)};
  return palette[index % (sizeof palette / sizeof palette[0])];
}

// One line style per configuration.
Qt::PenStyle configPen(BlockConfig config) {
  switch (config) {
    case BlockConfig::San: return Qt::SolidLine;
    case BlockConfig::SanSkip: return Qt::DashLine;
    case BlockConfig::SanFfn: return Qt::DotLine;
    case BlockConfig::Transformer: return Qt::DashDotLine;
  }
  return Qt::SolidLine;
}

QString configTitle(BlockConfig config) { return QString::fromStdString(rankdecay::configName(config)); }

// "sinkhorn T=50": the family and the parameters that differ from its defaults (legends stay readable).
QString opTitle(const OperatorSpec& op) {
  if (op.family == rankdecay::kTrainedOperator) return "trained";
  QString title = QString::fromStdString(op.family);
  const ParamSchema& schema = OperatorRegistry::builtin().get(op.family).schema;
  for (const auto& [name, value] : op.params) {
    const ParamSpec* spec = schema.find(name);
    if (spec && !spec->optional && spec->defaultValue == value) continue;
    title += " " + QString::fromStdString(name + "=" + formatValue(value));
  }
  return title;
}

void makeLinearAxis(QCPAxis* axis) {
  axis->setScaleType(QCPAxis::stLinear);
  axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  axis->setNumberFormat("g");
  axis->setNumberPrecision(3);
}

// A titled panel: a small grid holding the title and the axis rect.
QCPAxisRect* addPanel(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int col, const QString& title,
                      const QString& x, const QString& y) {
  auto* rect = new QCPAxisRect(plot);
  auto* cell = new QCPLayoutGrid;
  grid->addElement(row, col, cell);
  cell->addElement(0, 0, new QCPTextElement(plot, title, QFont("DejaVu Sans", 9, QFont::Bold)));
  cell->addElement(1, 0, rect);
  cell->setRowStretchFactor(0, 0.001);
  cell->setRowSpacing(0);
  styleAxis(rect->axis(QCPAxis::atBottom), x);
  styleAxis(rect->axis(QCPAxis::atLeft), y);
  rect->axis(QCPAxis::atBottom)->setTicker(integerTicker());
  return rect;
}

QCPGraph* addLine(QCustomPlot* plot, QCPAxisRect* rect, const QString& name, const QPen& pen) {
  QCPGraph* g = plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setName(name);
  g->setPen(pen);
  return g;
}

struct Range {
  double low = 1e300, high = -1e300;
  void add(double v) {
    if (!std::isfinite(v)) return;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  bool empty() const { return low > high; }
};

// The rigorous bound's local variant (one step from each measured layer of one operator's stacks, spec 3.4.3)
// as triangles at ℓ = 1 … L.
void drawLocalMarkers(QCustomPlot* plot, QCPAxisRect* rect, const rankdecay::TheoryCurve& curve, const QString& label,
                      const QColor& color) {
  QCPGraph* g = addLine(plot, rect, label, QPen(color));
  g->setLineStyle(QCPGraph::lsNone);
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, color, 7));
  QVector<double> x, y;
  for (size_t l = 1; l < curve.localLog10.size(); ++l) {
    x.push_back(double(l));
    y.push_back(std::clamp(std::pow(10.0, curve.localLog10[l]), kTheoryFloor, 1.0 / kTheoryFloor));
  }
  g->setData(x, y, true);
}

void setLogRange(QCPAxis* axis, const Range& r) {
  if (r.empty()) return axis->setRange(1e-3, 1);
  axis->setRange(std::max(r.low, kFloor) / 3, std::max(r.high * 3, std::max(r.low, kFloor) * 10));
}

}  // namespace

RankDecayView::RankDecayView(QWidget* parent) : View(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* settingsBar = new QHBoxLayout;
  live_ = new QCheckBox(tr("live"), this);
  live_->setObjectName("live");
  live_->setToolTip(tr("Compute rank decay with every change of the operators (off the GUI thread)"));
  settingsBar->addWidget(live_);
  settingsBar->addWidget(new QLabel(tr("source"), this));
  source_ = new QLineEdit(QString::fromStdString(settings_.source), this);
  source_->setObjectName("rankDecaySource");
  source_->setToolTip(tr("stack:n=…,d=…,H=…,L=…,scale=…,ln=none|pre|post · random:n=…,s=…,L=…,skip=0|1 · "
                         "model:checkpoint=DIR,images=fashion-mnist:test:0-99"));
  settingsBar->addWidget(source_, 1);
  settingsBar->addWidget(new QLabel(tr("networks"), this));
  seeds_ = new QSpinBox(this);
  seeds_->setObjectName("rankDecaySeeds");
  seeds_->setRange(1, 1000);
  seeds_->setValue(settings_.seeds);
  settingsBar->addWidget(seeds_);
  settingsBar->addWidget(new QLabel(tr("paths"), this));
  paths_ = new QSpinBox(this);
  paths_->setObjectName("rankDecayPaths");
  paths_->setRange(1, 10000);
  paths_->setValue(settings_.paths);
  settingsBar->addWidget(paths_);
  layout->addLayout(settingsBar);

  auto* displayBar = new QHBoxLayout;
  for (const std::string& name : rankdecay::configNames()) {
    auto* box = new QCheckBox(QString::fromStdString(name), this);
    box->setObjectName(QString::fromStdString("config_" + name));
    box->setChecked(name == "san" || name == "san+skip");
    box->setToolTip(tr("Draw the %1 configuration").arg(QString::fromStdString(name)));
    configBoxes_.push_back(box);
    displayBar->addWidget(box);
  }
  displayBar->addSpacing(12);
  logOutputs_ = new QCheckBox(tr("log ρ_out"), this);
  logOutputs_->setObjectName("logOutputs");
  logOutputs_->setToolTip(tr("ρ_out on a log axis (the band is then mean ± std of log10 ρ_out)"));
  showTheory_ = new QCheckBox(tr("theory"), this);
  showTheory_->setObjectName("showTheory");
  showTheory_->setChecked(true);
  showPrinted_ = new QCheckBox(tr("paper's printed bound"), this);
  showPrinted_->setObjectName("showPrinted");
  showPrinted_->setToolTip(tr("The paper's Thm 2 as printed: not a valid bound (its constant is √n too small per "
                              "layer); for reference only"));
  for (QCheckBox* box : {logOutputs_, showTheory_, showPrinted_}) displayBar->addWidget(box);
  displayBar->addStretch(1);
  layout->addLayout(displayBar);

  note_ = new QLabel(this);
  note_->setObjectName("rankDecayNote");
  note_->setWordWrap(true);
  layout->addWidget(note_);

  // In a shorter dock the figure scrolls (arrangePanels sets the height it needs).
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  plot_ = new QCustomPlot(scroll);
  plot_->setMinimumWidth(480);
  scroll->setWidget(plot_);
  plot_->plotLayout()->clear();
  heading_ = new QCPTextElement(plot_, tr("Rank decay"), captionFont());
  plot_->plotLayout()->addElement(0, 0, heading_);
  grid_ = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(1, 0, grid_);
  QCPLayoutGrid* grid = grid_;
  pathsRect_ = addPanel(plot_, grid, 0, 0, tr("attention paths"), tr("path depth t"), tr("σ₂/σ₁ of the product"));
  outputsRect_ = addPanel(plot_, grid, 0, 1, tr("layer outputs"), tr("layer ℓ"), tr("ρ_out = ‖res(X)‖₂/‖X‖₂"));
  theoryRect_ = addPanel(plot_, grid, 1, 0, tr("residual and theory (pure SAN, no LayerNorm)"), tr("layer ℓ"),
                         tr("‖res(X_ℓ)‖₂ (median)"));
  errorsRect_ = addPanel(plot_, grid, 1, 1, tr("attention marginal error"), tr("layer ℓ"),
                         tr("max |sum − 1| (rows, cols)"));
  entropyRect_ = addPanel(plot_, grid, 2, 0, tr("attention row entropy"), tr("layer ℓ"), tr("mean row entropy / log n"));
  rankRect_ = addPanel(plot_, grid, 2, 1, tr("attention effective rank"), tr("layer ℓ"), tr("effective rank (mean)"));
  for (QCPAxisRect* rect : {pathsRect_, theoryRect_, errorsRect_}) makeLogAxis(rect->axis(QCPAxis::atLeft));
  plot_->legend = new QCPLegend;  // the plot's own legend went with the cleared layout
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont("DejaVu Sans", 8));
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot_->legend->setWrap(2);
  plot_->plotLayout()->addElement(2, 0, plot_->legend);
  plot_->legend->setLayer("legend");
  plot_->plotLayout()->setRowStretchFactors({0.001, 1.0, 0.001});
  plot_->plotLayout()->setRowSpacing(0);
  layout->addWidget(scroll, 1);

  auto redraw = [this] {
    rebuild();
    plot_->replot();
  };
  for (size_t i = 0; i < configBoxes_.size(); ++i)
    connect(configBoxes_[i], &QCheckBox::toggled, this, [this, redraw, i](bool on) {
      redraw();
      // A configuration the session has not computed yet is asked for (the ticked ones are then computed).
      const auto* results = curves();
      const bool computed = results && std::any_of(results->begin(), results->end(), [i](const auto& r) {
        return r.request.config == BlockConfig(i);
      });
      if (on && results && !computed) {
        settings_.configs.clear();
        for (size_t k = 0; k < configBoxes_.size(); ++k)
          if (configBoxes_[k]->isChecked()) settings_.configs.push_back(BlockConfig(k));
        emitSettings();
      }
    });
  for (QCheckBox* box : {logOutputs_, showTheory_, showPrinted_}) connect(box, &QCheckBox::toggled, this, redraw);
  connect(live_, &QCheckBox::toggled, this, [this] { emitSettings(); });
  connect(source_, &QLineEdit::editingFinished, this, [this] {
    try {
      rankdecay::parseRankDecaySource(source_->text().toStdString());
    } catch (const Error& e) {
      note_->setText(tr("Source not changed: %1").arg(QString::fromStdString(e.what())));
      source_->setText(QString::fromStdString(settings_.source));
      return;
    }
    if (source_->text().toStdString() != settings_.source) emitSettings();
  });
  for (QSpinBox* box : {seeds_, paths_}) connect(box, &QSpinBox::editingFinished, this, [this] { emitSettings(); });
  arrangePanels(visiblePanels_);
  rebuild();
}

void RankDecayView::emitSettings() {
  settings_.source = source_->text().toStdString();
  settings_.seeds = seeds_->value();
  settings_.paths = paths_->value();
  emit settingsEdited(settings_, live_->isChecked());
}

void RankDecayView::setSettings(const rankdecay::RankDecaySettings& settings, bool live) {
  settings_ = settings;
  const QSignalBlocker b1(live_), b2(source_), b3(seeds_), b4(paths_);
  live_->setChecked(live);
  source_->setText(QString::fromStdString(settings.source));
  seeds_->setValue(settings.seeds);
  paths_->setValue(settings.paths);
}

const std::vector<rankdecay::RankDecayResult>* RankDecayView::curves() const {
  if (standalone_) return standalone_.get();
  return result_ && result_->rankDecay ? result_->rankDecay.get() : nullptr;
}

bool RankDecayView::shown(BlockConfig config) const { return configBoxes_[size_t(config)]->isChecked(); }

QCPAxisRect* RankDecayView::panel(const std::string& name) const {
  const std::map<std::string, QCPAxisRect*> panels{{"paths", pathsRect_},     {"outputs", outputsRect_},
                                                   {"theory", theoryRect_},   {"errors", errorsRect_},
                                                   {"entropy", entropyRect_}, {"rank", rankRect_}};
  const auto it = panels.find(name);
  return it == panels.end() ? nullptr : it->second;
}

QCPGraph* RankDecayView::outputGraph(size_t op, BlockConfig config) const {
  const auto it = outputGraphs_.find({op, int(config)});
  return it == outputGraphs_.end() ? nullptr : it->second;
}

void RankDecayView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  rebuild();
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  if (result_) emit redrawn(result_->requestId);
}

void RankDecayView::rebuild() {
  plot_->clearPlottables();
  outputGraphs_.clear();
  const auto* results = curves();
  if (!results || results->empty()) {
    note_->setText(tr("Rank decay runs when 'live' is on: σ₂/σ₁ of attention paths and ρ_out of the layer outputs "
                      "for the session's operators (default: a random stack, n = 32, 12 layers, 20 networks)."));
    heading_->setText(tr("Rank decay"));
    return;
  }
  std::vector<const rankdecay::RankDecayResult*> drawn;
  for (const auto& r : *results)
    if (r.request.source.kind == rankdecay::SourceKind::Random || shown(r.request.config)) drawn.push_back(&r);
  note_->setText(drawn.empty() ? tr("No configuration selected: tick san, san+skip, san+ffn or transformer.")
                               : QString());
  const auto& request = results->front().request;
  const QString networks =
      request.source.kind == rankdecay::SourceKind::Stack ? tr(" · %1 networks").arg(request.seeds) : QString();
  heading_->setText(tr("Rank decay · %1%2 · %3 paths per depth")
                        .arg(QString::fromStdString(request.source.toString()), networks)
                        .arg(request.paths.paths));
  int slotCount = 0;
  for (const auto* r : drawn) slotCount += int(r->operators.size());
  int slot = 0;
  for (const auto* r : drawn) {
    drawPaths(*r, slot, std::max(slotCount, 1));
    slot += int(r->operators.size());
    drawOutputs(*r);
    drawMarginalErrors(*r);
    drawAttentionShape(*r);
  }
  for (const auto* r : drawn)
    if (r->request.config == BlockConfig::San) drawTheory(*r);
  bool anyPaths = false, anyOutputs = false, anyAttention = false;
  for (const auto& r : *results)
    for (const auto& c : r.operators) {
      anyPaths |= !c.paths.empty();
      anyOutputs |= !c.outputs.empty();
      anyAttention |= !c.attention.empty();
    }
  arrangePanels({anyPaths, anyOutputs, anyOutputs, anyAttention, anyAttention, anyAttention});
  // Ranges: every panel fits what it shows.
  Range paths, rho, res, errors, ranks;
  int depth = 1, layers = 1;
  for (const auto* r : drawn)
    for (const auto& c : r->operators) {
      for (const auto& d : c.paths) {
        paths.add(std::max(d.box.whiskerLow, kFloor));
        paths.add(d.box.whiskerHigh);
        depth = std::max(depth, d.t);
      }
      for (const auto& s : c.outputs) {
        rho.add(logOutputs_->isChecked() ? std::pow(10.0, s.log10Rho.mean - s.log10Rho.std) : s.mean - s.std);
        rho.add(logOutputs_->isChecked() ? std::pow(10.0, s.log10Rho.mean + s.log10Rho.std) : s.mean + s.std);
        res.add(std::max(s.resMedian, kFloor));
        layers = std::max(layers, s.layer);
      }
      for (const auto& a : c.attention) {
        errors.add(std::max({a.rowErrorMax, a.colErrorMax, kFloor}));
        ranks.add(a.effectiveRank);
        layers = std::max(layers, a.layer);
      }
    }
  pathsRect_->axis(QCPAxis::atBottom)->setRange(0.5, depth + 0.5);
  setLogRange(pathsRect_->axis(QCPAxis::atLeft), paths);
  QCPAxis* rhoAxis = outputsRect_->axis(QCPAxis::atLeft);
  if (logOutputs_->isChecked()) {
    makeLogAxis(rhoAxis);
    setLogRange(rhoAxis, rho);
  } else {
    makeLinearAxis(rhoAxis);
    rhoAxis->setRange(0, rho.empty() ? 1.0 : std::min(1.05, std::max(0.05, rho.high * 1.1)));
  }
  for (QCPAxisRect* rect : {outputsRect_, theoryRect_, errorsRect_, entropyRect_, rankRect_})
    rect->axis(QCPAxis::atBottom)->setRange(-0.5, layers + 0.5);
  entropyRect_->axis(QCPAxis::atLeft)->setRange(0, 1.05);  // a fraction of log n
  rankRect_->axis(QCPAxis::atLeft)->setRange(0, ranks.empty() ? 1.0 : ranks.high * 1.1 + 0.5);
  // Theory curves join the range up to 1e4 × the measured maximum: a vacuous bound should not squash the data.
  const Range measured = res;
  if (showTheory_->isChecked() && !res.empty())
    for (const auto* r : drawn)
      if (r->request.config == BlockConfig::San)
        for (const auto& c : r->operators)
          for (const auto& t : c.theory)
            if (t.name != "printed" || showPrinted_->isChecked())
              for (const std::vector<double>* curve : {&t.log10, &t.localLog10})
                for (double v : *curve)
                  res.add(std::clamp(std::pow(10.0, v), measured.low / 1e4, measured.high * 1e4));
  setLogRange(theoryRect_->axis(QCPAxis::atLeft), res);
  setLogRange(errorsRect_->axis(QCPAxis::atLeft), errors);
}

int RankDecayView::panelColumns() const { return width() >= kThreeColumnWidth ? 3 : 2; }

void RankDecayView::resizeEvent(QResizeEvent* event) {
  View::resizeEvent(event);
  if (panelColumns() == arrangedColumns_) return;
  arrangePanels(visiblePanels_);
  plot_->replot();
}

void RankDecayView::arrangePanels(const std::vector<bool>& visible) {
  visiblePanels_ = visible;
  arrangedColumns_ = panelColumns();
  const std::vector<QCPAxisRect*> rects{pathsRect_, outputsRect_, theoryRect_, errorsRect_, entropyRect_, rankRect_};
  std::vector<QCPLayoutElement*> cells;
  for (QCPAxisRect* rect : rects) {
    QCPLayoutElement* cell = rect->layout();
    if (cell->layout()) cell->layout()->take(cell);
    cells.push_back(cell);
  }
  grid_->simplify();
  int shown = 0;
  for (size_t i = 0; i < rects.size(); ++i) {
    auto* cell = static_cast<QCPLayoutGrid*>(cells[i]);
    for (int k = 0; k < cell->elementCount(); ++k) cell->elementAt(k)->setVisible(visible[i]);
    cell->setVisible(visible[i]);
    if (!visible[i]) continue;
    grid_->addElement(shown / arrangedColumns_, shown % arrangedColumns_, cell);
    ++shown;
  }
  // Each row of panels needs about kPanelHeight pixels, the heading and the legend kChromeHeight: a shorter
  // dock scrolls instead of squeezing the axes into each other.
  const int rows = (shown + arrangedColumns_ - 1) / arrangedColumns_;
  plot_->setMinimumHeight(std::max(1, rows) * kPanelHeight + kChromeHeight);
}

void RankDecayView::drawPaths(const rankdecay::RankDecayResult& result, int firstSlot, int slotCount) {
  const double width = 0.8 / slotCount;
  for (size_t i = 0; i < result.operators.size(); ++i) {
    const auto& c = result.operators[i];
    if (c.paths.empty()) continue;
    auto* boxes = new QCPStatisticalBox(pathsRect_->axis(QCPAxis::atBottom), pathsRect_->axis(QCPAxis::atLeft));
    const bool random = result.request.source.kind == rankdecay::SourceKind::Random;
    boxes->setName(opTitle(c.op) + (random ? QString() : " · " + configTitle(result.request.config)));
    if (!c.outputs.empty()) boxes->removeFromLegend();  // the ρ_out line names operator and configuration
    const QColor color = operatorColor(i);
    boxes->setPen(QPen(color, 1.0, random ? Qt::SolidLine : configPen(result.request.config)));
    QColor fill = color;
    fill.setAlpha(60);
    boxes->setBrush(fill);
    boxes->setMedianPen(QPen(color.darker(150), 2.0));
    boxes->setWhiskerPen(QPen(color, 1.0, Qt::SolidLine));
    boxes->setWidth(width * 0.9);
    boxes->setWhiskerWidth(width * 0.5);
    const double offset = (firstSlot + int(i) - (slotCount - 1) / 2.0) * width;
    for (const auto& d : c.paths)
      boxes->addData(d.t + offset, std::max(d.box.whiskerLow, kFloor), std::max(d.box.q1, kFloor),
                     std::max(d.box.median, kFloor), std::max(d.box.q3, kFloor), std::max(d.box.whiskerHigh, kFloor));
  }
}

void RankDecayView::drawOutputs(const rankdecay::RankDecayResult& result) {
  const bool log = logOutputs_->isChecked();
  for (size_t i = 0; i < result.operators.size(); ++i) {
    const auto& c = result.operators[i];
    if (c.outputs.empty()) continue;
    const QColor color = operatorColor(i);
    const Qt::PenStyle style = configPen(result.request.config);
    QVector<double> x, centre, low, high;
    for (const auto& s : c.outputs) {
      x.push_back(s.layer);
      if (log) {
        centre.push_back(std::pow(10.0, s.log10Rho.mean));
        low.push_back(std::pow(10.0, s.log10Rho.mean - s.log10Rho.std));
        high.push_back(std::pow(10.0, s.log10Rho.mean + s.log10Rho.std));
      } else {
        centre.push_back(s.mean);
        low.push_back(s.mean - s.std);
        high.push_back(s.mean + s.std);
      }
    }
    QCPGraph* lower = addLine(plot_, outputsRect_, QString(), QPen(Qt::NoPen));
    QCPGraph* upper = addLine(plot_, outputsRect_, QString(), QPen(Qt::NoPen));
    lower->setData(x, low, true);
    upper->setData(x, high, true);
    QColor band = color;
    band.setAlpha(40);
    upper->setBrush(band);
    upper->setChannelFillGraph(lower);
    lower->removeFromLegend();
    upper->removeFromLegend();
    QCPGraph* mean = addLine(plot_, outputsRect_, opTitle(c.op) + " · " + configTitle(result.request.config),
                             QPen(color, 1.6, style));
    mean->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 4));
    mean->setData(x, centre, true);
    outputGraphs_[{i, int(result.request.config)}] = mean;
  }
}

void RankDecayView::drawTheory(const rankdecay::RankDecayResult& result) {
  for (size_t i = 0; i < result.operators.size(); ++i) {  // the measured residual, one line per operator
    const auto& c = result.operators[i];
    QVector<double> layers, measured;
    for (const auto& s : c.outputs) {
      layers.push_back(s.layer);
      measured.push_back(std::max(s.resMedian, kFloor));
    }
    QCPGraph* res = addLine(plot_, theoryRect_, QString(), QPen(operatorColor(i), 1.6));
    res->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, operatorColor(i), operatorColor(i), 4));
    res->setData(layers, measured, true);
    res->removeFromLegend();
  }
  if (!showTheory_->isChecked()) return;
  // The weight curves (printed, linearised, rigorous) depend on the weights and r_0 only, which every operator
  // shares: drawn once, in black, from an operator where they apply (greyed with the reason otherwise). The
  // data bound depends on the attention: one set of markers per operator, in its colour.
  for (const char* name : {"printed", "linearised", "rigorous", "data"}) {
    if (std::string(name) == "printed" && !showPrinted_->isChecked()) continue;
    const bool perOperator = std::string(name) == "data";
    bool legendShown = false;
    const rankdecay::TheoryCurve* chosen = nullptr;
    for (size_t i = 0; i < result.operators.size(); ++i)
      for (const auto& curve : result.operators[i].theory)
        if (curve.name == name && (!chosen || (curve.applies && !chosen->applies))) chosen = &curve;
    for (size_t i = 0; i < result.operators.size(); ++i) {
      const rankdecay::TheoryCurve* curve = nullptr;
      for (const auto& t : result.operators[i].theory)
        if (t.name == name) curve = &t;
      if (!curve || (!perOperator && curve != chosen)) continue;
      const QColor color = !curve->applies ? QColor(185, 185, 185) : perOperator ? operatorColor(i) : QColor(30, 30, 30);
      QPen pen(color, curve->name == "rigorous" ? 1.8 : 1.3);
      if (curve->name == "printed") pen.setStyle(Qt::DotLine);
      if (curve->name == "linearised") pen.setStyle(Qt::DashLine);
      QString label = QString::fromStdString(curve->label);
      if (perOperator) label += tr(" (squares)");
      if ((curve->name == "printed" || curve->name == "linearised") && curve->vacuousFraction > 0)
        label += tr("; √c·r₀ ≥ 1 (vacuous) in %1% of networks").arg(std::round(100 * curve->vacuousFraction));
      if (curve->name == "linearised" && curve->applies && curve->validLayers < int(curve->log10.size()) - 1)
        label += curve->validLayers == 0 ? tr("; not drawn: max|A| > 0.3 from layer 1 on")
                                         : tr("; drawn up to layer %1 (max|A| ≤ 0.3)").arg(curve->validLayers);
      if (!curve->applies) label += tr(" — n/a: ") + QString::fromStdString(curve->reason);
      QCPGraph* g = addLine(plot_, theoryRect_, label, pen);
      if (legendShown) g->removeFromLegend();
      legendShown = true;
      if (perOperator) {
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, color, 7));
      }
      QVector<double> x, y;
      // The linearised estimate is drawn only over the layers where the scores are small enough for it.
      const size_t last = curve->name == "linearised"
                              ? std::min(curve->log10.size(), size_t(curve->validLayers) + 1)
                              : curve->log10.size();
      for (size_t l = perOperator ? 1 : 0; l < last; ++l) {
        x.push_back(double(l));
        y.push_back(std::clamp(std::pow(10.0, curve->log10[l]), kTheoryFloor, 1.0 / kTheoryFloor));
      }
      g->setData(x, y, true);
      if (!curve->localLog10.empty())
        drawLocalMarkers(plot_, theoryRect_, *curve,
                         tr("rigorous bound, local: one step from each measured layer of %1 (triangles)%2")
                             .arg(opTitle(result.operators[i].op), curve->applies ? QString() : tr(" — n/a")),
                         curve->applies ? operatorColor(i) : color);
    }
  }
}

void RankDecayView::drawAttentionShape(const rankdecay::RankDecayResult& result) {
  for (size_t i = 0; i < result.operators.size(); ++i) {
    const auto& c = result.operators[i];
    if (c.attention.empty()) continue;
    QVector<double> x, entropy, rank;
    for (const auto& a : c.attention) {
      x.push_back(a.layer);
      entropy.push_back(a.entropy);
      rank.push_back(a.effectiveRank);
    }
    const QPen pen(operatorColor(i), 1.2, configPen(result.request.config));
    const QCPScatterStyle dots(QCPScatterStyle::ssCircle, operatorColor(i), Qt::white, 4);
    for (auto [rect, values] : {std::pair{entropyRect_, &entropy}, std::pair{rankRect_, &rank}}) {
      QCPGraph* g = addLine(plot_, rect, QString(), pen);
      g->setScatterStyle(dots);
      g->setData(x, *values, true);
      g->removeFromLegend();
    }
  }
}

void RankDecayView::drawMarginalErrors(const rankdecay::RankDecayResult& result) {
  for (size_t i = 0; i < result.operators.size(); ++i) {
    const auto& c = result.operators[i];
    if (c.attention.empty()) continue;
    QVector<double> x, y;
    for (const auto& a : c.attention) {
      x.push_back(a.layer);
      y.push_back(std::max({a.rowErrorMax, a.colErrorMax, kFloor}));
    }
    QCPGraph* g = addLine(plot_, errorsRect_, QString(), QPen(operatorColor(i), 1.2, configPen(result.request.config)));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, operatorColor(i), Qt::white, 4));
    g->setData(x, y, true);
    g->removeFromLegend();
  }
}

nlohmann::json RankDecayView::saveState() const {
  nlohmann::json configs = nlohmann::json::array();
  for (size_t i = 0; i < configBoxes_.size(); ++i)
    if (configBoxes_[i]->isChecked()) configs.push_back(rankdecay::configNames()[i]);
  return {{"configs", configs},
          {"logOutputs", logOutputs_->isChecked()},
          {"showTheory", showTheory_->isChecked()},
          {"showPrinted", showPrinted_->isChecked()}};
}

void RankDecayView::restoreState(const nlohmann::json& state) {
  const std::vector<std::string> configs =
      stateValue(state, "configs", std::vector<std::string>{"san", "san+skip"});
  for (size_t i = 0; i < configBoxes_.size(); ++i) {
    const QSignalBlocker block(configBoxes_[i]);
    configBoxes_[i]->setChecked(std::find(configs.begin(), configs.end(), rankdecay::configNames()[i]) !=
                                configs.end());
  }
  for (auto [box, key, fallback] : {std::tuple{logOutputs_, "logOutputs", false},
                                    std::tuple{showTheory_, "showTheory", true},
                                    std::tuple{showPrinted_, "showPrinted", false}}) {
    const QSignalBlocker block(box);
    box->setChecked(stateValue(state, key, fallback));
  }
  rebuild();
  plot_->replot();
}

std::string RankDecayView::exportUnavailableReason() const {
  return curves() && !curves()->empty() ? std::string()
                                        : "no rank-decay curves: the session does not compute them (switch 'live' on)";
}

void RankDecayView::exportFigure(const std::string& path, const std::string& format,
                                 const ExportSettings& settings) const {
  if (const std::string why = exportUnavailableReason(); !why.empty()) throw Error("rank decay: " + why);
  if (format == "csv") return writeFileAtomically(path, rankdecay::curvesCsv(*curves()));
  exportPlot(*plot_, path, format, settings);
}

void writeRankDecayFigure(const rankdecay::RankDecayResult& result, const std::string& path) {
  const std::string format = QFileInfo(QString::fromStdString(path)).suffix().toLower().toStdString();
  if (format != "png" && format != "svg" && format != "pdf")
    throw InvalidArgument("figure '" + path + "': the name must end in .png, .svg or .pdf");
  RankDecayView view;
  const ExportSettings settings;
  view.resize(settings.width, settings.height);
  view.standalone_ = std::make_shared<const std::vector<rankdecay::RankDecayResult>>(1, result);
  for (size_t i = 0; i < view.configBoxes_.size(); ++i) {
    const QSignalBlocker block(view.configBoxes_[i]);
    view.configBoxes_[i]->setChecked(int(i) == int(result.request.config));
  }
  view.showPrinted_->setChecked(false);
  view.rebuild();
  view.exportFigure(path, format, settings);
}

}  // namespace tl
