#include "widgets/views/cls_map_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <cmath>

#include "common/errors.h"
#include "widgets/plot/colour_maps.h"
#include "widgets/plot/plot_style.h"
#include "widgets/views/cls_maps_layout.h"
#include "widgets/views/model_captions.h"

namespace tl {
namespace {

constexpr int kDefaultOpacityPercent = 65;

void selectData(QComboBox* combo, const QString& data) {
  const int index = combo->findData(data);
  if (index >= 0) combo->setCurrentIndex(index);
}

QString kindHeading(ClsMapKind kind) {
  switch (kind) {
    case ClsMapKind::Query: return QObject::tr("[CLS] → patches");
    case ClsMapKind::Key: return QObject::tr("patches → [CLS]");
    case ClsMapKind::Rollout: return QObject::tr("attention rollout");
  }
  return {};
}

// Short: the scale is as tall as the large map, which can be small in a dock.
QString scaleLabel(ClsMapKind kind, ClsTrace trace) {
  QString label;
  switch (kind) {
    case ClsMapKind::Query: label = QObject::tr("A[CLS, patch]"); break;
    case ClsMapKind::Key: label = QObject::tr("A[patch, CLS]"); break;
    case ClsMapKind::Rollout: label = QObject::tr("rollout R[CLS, patch]"); break;
  }
  return trace == ClsTrace::Difference ? QObject::tr("Δ %1, swapped − original").arg(label) : label;
}

}  // namespace

ClsMapView::ClsMapView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(makeControls(content));

  QCPLayoutGrid* grid = makePlot(content, tr("[CLS] maps"), QSize(360, 170), QFont("DejaVu Sans", 9));
  scale_ = new QCPColorScale(plot_);
  scale_->setBarWidth(12);
  scale_->axis()->setTickLabelFont(QFont("DejaVu Sans", 8));
  maps_ = new ClsMapsLayout;
  grid->addElement(0, 0, maps_);
  large_ = makeImageOverlayMap(plot_, scale_, captionFont());
  maps_->setLarge(large_.rect);
  maps_->setScale(scale_);
  layout->addWidget(plot_, 1);
  setContent(content);

  // Square pixels at whatever size the plot is laid out, on screen and in exports alike.
  connect(plot_, &QCustomPlot::afterLayout, this, [this] {
    fitImageExtent(large_);
    for (ImageOverlayMap& panel : panels_) fitImageExtent(panel);
    alignScaleWithLargeMap();
  });
}

QWidget* ClsMapView::makeControls(QWidget* parent) {
  auto* controls = new QWidget(parent);
  auto* row = new QHBoxLayout(controls);
  row->setContentsMargins(0, 0, 0, 0);
  auto combo = [&](const char* name, const QString& tip) {
    auto* box = new QComboBox(controls);
    box->setObjectName(name);
    box->setToolTip(tip);
    return box;
  };
  kind_ = combo("clsKind", tr("Which attention the maps show"));
  kind_->addItem(kindHeading(ClsMapKind::Query), clsMapKindName(ClsMapKind::Query));
  kind_->setItemData(0, tr("Row 0 of the attention: how much [CLS] reads from each patch"), Qt::ToolTipRole);
  kind_->addItem(kindHeading(ClsMapKind::Key), clsMapKindName(ClsMapKind::Key));
  kind_->setItemData(1, tr("Column 0 of the attention: how much each patch reads from [CLS]"), Qt::ToolTipRole);
  kind_->addItem(tr("rollout"), clsMapKindName(ClsMapKind::Rollout));
  kind_->setItemData(2, tr("Attention rollout (Abnar & Zuidema 2020) through the layers, residual 0.5: one small "
                           "map per depth, the large one through the source's layer"), Qt::ToolTipRole);
  fusion_ = combo("clsFusion", tr("How rollout combines the heads of a layer, entry by entry"));
  for (HeadFusion f : {HeadFusion::Mean, HeadFusion::Max, HeadFusion::Min}) fusion_->addItem(headFusionName(f), headFusionName(f));
  trace_ = combo("clsTrace", tr("The model's own attention, the run with the primary operator swapped in (Source "
                                "panel: swap), or their difference"));
  trace_->addItem(tr("original"), clsTraceName(ClsTrace::Original));
  trace_->addItem(tr("swapped"), clsTraceName(ClsTrace::Swapped));
  trace_->addItem(tr("difference"), clsTraceName(ClsTrace::Difference));
  colours_ = combo("clsColours", tr("Colour map of the overlay (differences always use blue–white–red)"));
  colours_->addItems(sequentialGradientNames());
  opacity_ = new QSlider(Qt::Horizontal, controls);
  opacity_->setObjectName("clsOpacity");
  opacity_->setRange(0, 100);
  opacity_->setValue(kDefaultOpacityPercent);
  opacity_->setToolTip(tr("Opacity of the map over the image"));
  smooth_ = new QCheckBox(tr("bilinear"), controls);
  smooth_->setObjectName("clsSmooth");
  smooth_->setToolTip(tr("Upsample the patch grid bilinearly; off: one block per patch, as the tokens are"));

  // One row: the view sits in the wide bottom tabs.
  for (auto [label, control] : {std::pair{tr("map"), static_cast<QWidget*>(kind_)}, {tr("heads"), fusion_},
                                {tr("show"), trace_}, {tr("colours"), colours_}, {tr("opacity"), opacity_}}) {
    row->addWidget(new QLabel(label, controls));
    row->addWidget(control);
    row->addSpacing(6);
  }
  row->addWidget(smooth_);
  row->addStretch(1);

  auto changed = [this] {
    fusion_->setEnabled(options().kind == ClsMapKind::Rollout);
    redraw();
    plot_->replot();
  };
  for (QComboBox* box : {kind_, fusion_, trace_, colours_}) connect(box, &QComboBox::currentIndexChanged, this, changed);
  connect(opacity_, &QSlider::valueChanged, this, changed);
  connect(smooth_, &QCheckBox::toggled, this, changed);
  fusion_->setEnabled(false);
  return controls;
}

ClsMapOptions ClsMapView::options() const {
  ClsMapOptions o;
  o.kind = parseClsMapKind(kind_->currentData().toString().toStdString());
  o.trace = parseClsTrace(trace_->currentData().toString().toStdString());
  o.fusion = parseHeadFusion(fusion_->currentData().toString().toStdString());
  return o;
}

void ClsMapView::setOptions(const ClsMapOptions& options) {
  {
    const QSignalBlocker blockKind(kind_), blockTrace(trace_), blockFusion(fusion_);
    selectData(kind_, clsMapKindName(options.kind));
    selectData(trace_, clsTraceName(options.trace));
    selectData(fusion_, headFusionName(options.fusion));
  }
  fusion_->setEnabled(options.kind == ClsMapKind::Rollout);
  redraw();
  plot_->replot();
}

void ClsMapView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  if (!result_ || !result_->model) {
    showMessage(tr("This view shows where a vision transformer's [CLS] token looks in the image.\nThe source is "
                   "not a model: pick \"Model checkpoint\" in the Source panel and open a checkpoint."));
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  showContent();
  offerSwappedTraces(result_->swapped.has_value());
  redraw();
  plot_->replot(QCustomPlot::rpQueuedRefresh);
  emit redrawn(result_->requestId);
}

// "swapped" and "difference" need a swapped run; without one (swap scope none) they are greyed out.
void ClsMapView::offerSwappedTraces(bool available) {
  auto* model = qobject_cast<QStandardItemModel*>(trace_->model());
  for (int row = 1; row < trace_->count(); ++row) model->item(row)->setEnabled(available);
}

// The colour bar spans the large map's image exactly (afterLayout: the margins apply at once, and the
// scale's own update(upLayout) passes its new rect to the bar inside it).
void ClsMapView::alignScaleWithLargeMap() {
  const QRect image = large_.rect->rect(), cell = scale_->outerRect();
  scale_->setMargins(QMargins(0, std::max(image.top() - cell.top(), 0), 0, std::max(cell.bottom() - image.bottom(), 0)));
  scale_->update(QCPLayoutElement::upLayout);
}

void ClsMapView::setPanelCount(int count) {
  if (count == int(panels_.size())) return;
  for (const ImageOverlayMap& panel : panels_) removeImageOverlayMap(plot_, panel);
  panels_.clear();
  maps_->removePanels();
  for (int p = 0; p < count; ++p) {
    panels_.push_back(makeImageOverlayMap(plot_, scale_, QFont("DejaVu Sans", 8)));
    maps_->addPanel(panels_.back().rect);
  }
}

void ClsMapView::redraw() {
  if (!result_ || !result_->model) return;
  const ClsMapOptions wanted = options();
  const ClsMaps maps = clsMapsOf(*result_, wanted);
  drawn_ = maps.trace;
  setPanelCount(int(maps.panels.size()));

  const bool difference = maps.trace == ClsTrace::Difference;
  scale_->setGradient(difference ? divergingGradient() : sequentialGradient(colours_->currentText()));
  // Constant maps (a difference before the swapped layer is all zero) still get a valid scale, 0 in the middle.

  QCPRange range(maps.lo, maps.hi);
  if (!(maps.hi > maps.lo)) range = difference ? QCPRange(-1, 1) : QCPRange(maps.lo, maps.lo + 1);
  scale_->setDataRange(range);
  styleAxis(scale_->axis(), scaleLabel(wanted.kind, maps.trace));

  const MatD grey = greyImage(result_->model->image);
  const double opacity = opacity_->value() / 100.0;
  const bool smooth = smooth_->isChecked();
  const bool rollout = wanted.kind == ClsMapKind::Rollout;
  for (int p = 0; p < int(panels_.size()); ++p) {
    ImageOverlayMap& panel = panels_[size_t(p)];
    fillImage(panel, grey);
    fillOverlay(panel, maps.panels[size_t(p)], opacity, smooth);
    setHighlighted(panel, p == maps.selected);
    panel.setTitle(rollout ? tr("through layer %1").arg(p) : tr("head %1").arg(p));
  }
  fillImage(large_, grey);
  fillOverlay(large_, maps.large(), opacity, smooth);
  const ModelSourceSpec& source = result_->session.source.model;
  large_.setTitle(rollout ? tr("through layer %1, heads fused by %2").arg(source.layer).arg(headFusionName(wanted.fusion))
                                : tr("layer %1, head %2").arg(source.layer).arg(source.head));
  drawHeading(maps);
}

// Two or three lines: what the maps are and of which image, which run they come from, and the operator's
// parameters when it is swapped in.
void ClsMapView::drawHeading(const ClsMaps& maps) {
  const ModelRun& model = *result_->model;
  const ModelSourceSpec& source = result_->session.source.model;
  const ClsMapOptions wanted = options();
  const QString what = wanted.kind == ClsMapKind::Rollout
                           ? tr("Attention rollout through layer %1 (heads fused by %2, residual %3)")
                                 .arg(source.layer).arg(headFusionName(wanted.fusion)).arg(wanted.residual)
                           : tr("%1 · layer %2 · head %3").arg(kindHeading(wanted.kind)).arg(source.layer).arg(source.head);
  QStringList lines{what + "  ·  " + QString::fromStdString(model.image.description)};
  if (maps.trace == ClsTrace::Original) {
    QString line = tr("original: the model's own %1").arg(familyTitle(model.config.attention));
    if (wanted.trace != ClsTrace::Original) line += tr("  (nothing swapped in: the swap scope is none)");
    lines << line;
  } else {
    const QString swap = swapCaption(*result_);
    QString line = maps.trace == ClsTrace::Swapped ? tr("with %1").arg(swap) : tr("difference: with %1 − original").arg(swap);
    if (maps.trace == ClsTrace::Difference && !(maps.hi > maps.lo))
      line += tr("  (none here: the swap starts at layer %1)").arg(result_->swappedLayers.front());
    lines << line << operatorCaption(result_->session.operators.front());
  }
  heading_->setText(lines.join('\n'));
}

MatD ClsMapView::imageValues() const {
  QCPColorMapData* data = large_.image->data();
  MatD m(data->valueSize(), data->keySize());
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) m(r, c) = data->cell(c, r);
  return m;
}

QCPRange ClsMapView::colourRange() const { return scale_->dataRange(); }
QString ClsMapView::heading() const { return heading_->text(); }

nlohmann::json ClsMapView::saveState() const {
  const ClsMapOptions o = options();
  return {{"kind", clsMapKindName(o.kind)},
          {"trace", clsTraceName(o.trace)},
          {"fusion", headFusionName(o.fusion)},
          {"colours", colours_->currentText().toStdString()},
          {"opacity", opacity_->value() / 100.0},
          {"bilinear", smooth_->isChecked()}};
}

void ClsMapView::restoreState(const nlohmann::json& state) {
  {
    const QSignalBlocker blockColours(colours_), blockOpacity(opacity_), blockSmooth(smooth_);
    colours_->setCurrentText(QString::fromStdString(stateValue<std::string>(state, "colours", "viridis")));
    opacity_->setValue(int(std::lround(100 * stateValue(state, "opacity", kDefaultOpacityPercent / 100.0))));
    smooth_->setChecked(stateValue(state, "bilinear", false));
  }
  // Each key falls back to its default on its own (a block from a newer version may name other kinds).
  auto parsed = [&](const char* key, auto parse, auto fallback) {
    try {
      return parse(stateValue<std::string>(state, key, ""));
    } catch (const InvalidArgument&) {
      return fallback;
    }
  };
  ClsMapOptions o;
  o.kind = parsed("kind", parseClsMapKind, o.kind);
  o.trace = parsed("trace", parseClsTrace, o.trace);
  o.fusion = parsed("fusion", parseHeadFusion, o.fusion);
  setOptions(o);
}

}  // namespace tl
