#include "widgets/plot/image_overlay_map.h"

#include <algorithm>

#include "widgets/plot/colour_maps.h"

namespace tl {
namespace {

// Cells of a keys × values grid centred on a `width` × `height` extent starting at 0; QCustomPlot draws the
// outer cells whole (tight boundary off), so the grid covers [0, width] × [0, height] exactly.
void spanExtent(QCPColorMapData* data, int keys, int values, double width, double height) {
  data->setSize(keys, values);
  const double halfKey = width / keys / 2, halfValue = height / values / 2;
  data->setRange(QCPRange(halfKey, width - halfKey), QCPRange(halfValue, height - halfValue));
}

QPen framePen(bool highlighted) {
  return highlighted ? QPen(QColor(200, 30, 30), 2.5) : QPen(QColor(150, 150, 150), 0.8);
}

}  // namespace

MatD ImageOverlayMap::values() const {
  QCPColorMapData* data = overlay->data();  // cell() is not const in QCustomPlot 2.1
  MatD m(data->valueSize(), data->keySize());
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) m(r, c) = data->cell(c, r);
  return m;
}

void ImageOverlayMap::setTitle(const QString& title) { rect->axis(QCPAxis::atTop)->setLabel(title); }

ImageOverlayMap makeImageOverlayMap(QCustomPlot* plot, QCPColorScale* scale, const QFont& titleFont) {
  ImageOverlayMap m;
  m.rect = new QCPAxisRect(plot);
  // The four axes only frame the image: no ticks, tick labels or grid, so the map gets the whole rect.
  m.rect->setupFullAxesBox();
  for (QCPAxis* axis : m.rect->axes()) {
    axis->setTicks(false);
    axis->setTickLabels(false);
    axis->grid()->setVisible(false);
    axis->setBasePen(framePen(false));
  }
  QCPAxis* top = m.rect->axis(QCPAxis::atTop);
  top->setLabelFont(titleFont);
  top->setLabelPadding(3);
  m.rect->setAutoMargins(QCP::msNone);  // fitImageExtent sets them
  QCPAxis* x = m.rect->axis(QCPAxis::atBottom);
  QCPAxis* y = m.rect->axis(QCPAxis::atLeft);
  y->setRangeReversed(true);  // image row 0 at the top

  m.image = new QCPColorMap(x, y);
  m.image->setGradient(greyGradient());
  m.image->setDataRange(QCPRange(0, 1));
  m.image->setInterpolate(false);
  m.image->setTightBoundary(false);
  m.overlay = new QCPColorMap(x, y);
  m.overlay->setTightBoundary(false);
  m.overlay->setColorScale(scale);
  return m;
}

void removeImageOverlayMap(QCustomPlot* plot, const ImageOverlayMap& map) {
  plot->removePlottable(map.overlay);
  plot->removePlottable(map.image);
}

void fillImage(ImageOverlayMap& map, const MatD& grey) {
  QCPColorMapData* data = map.image->data();
  spanExtent(data, int(grey.cols()), int(grey.rows()), double(grey.cols()), double(grey.rows()));
  for (int r = 0; r < grey.rows(); ++r)
    for (int c = 0; c < grey.cols(); ++c) data->setCell(c, r, grey(r, c));
}

void fillOverlay(ImageOverlayMap& map, const MatD& values, double opacity, bool smooth) {
  const QCPColorMapData* image = map.image->data();
  QCPColorMapData* data = map.overlay->data();
  spanExtent(data, int(values.cols()), int(values.rows()), image->keySize(), image->valueSize());
  for (int r = 0; r < values.rows(); ++r)
    for (int c = 0; c < values.cols(); ++c) data->setCell(c, r, values(r, c));
  data->fillAlpha(static_cast<unsigned char>(std::clamp(opacity, 0.0, 1.0) * 255 + 0.5));
  map.overlay->setInterpolate(smooth);
}

void setHighlighted(ImageOverlayMap& map, bool on) {
  for (QCPAxis* axis : map.rect->axes()) axis->setBasePen(framePen(on));
  map.rect->axis(QCPAxis::atTop)->setLabelColor(on ? QColor(200, 30, 30) : Qt::black);
}

void fitImageExtent(ImageOverlayMap& map) {
  const double width = map.image->data()->keySize(), height = map.image->data()->valueSize();
  const QRect outer = map.rect->outerRect();
  constexpr int kPad = 2;
  const QCPAxis* top = map.rect->axis(QCPAxis::atTop);
  const int titleHeight = QFontMetrics(top->labelFont()).height() + top->labelPadding() + kPad;
  const int roomWidth = outer.width() - 2 * kPad, roomHeight = outer.height() - titleHeight - kPad;
  if (width <= 0 || height <= 0 || roomWidth <= 0 || roomHeight <= 0) return;
  // The inner rect shrinks to the image's aspect, centred in the room below the title; setMargins moves it
  // at once, before anything is drawn, so the frame hugs the image and the title sits right above it.
  const double pixelsPerUnit = std::min(roomWidth / width, roomHeight / height);
  const int w = int(width * pixelsPerUnit), h = int(height * pixelsPerUnit);
  const int left = (outer.width() - w) / 2, topMargin = titleHeight + (roomHeight - h) / 2;
  map.rect->setMargins(QMargins(left, topMargin, outer.width() - w - left, outer.height() - h - topMargin));
  map.rect->axis(QCPAxis::atBottom)->setRange(0, width);
  map.rect->axis(QCPAxis::atLeft)->setRange(0, height);
}

}  // namespace tl
