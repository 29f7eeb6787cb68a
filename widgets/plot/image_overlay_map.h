#pragma once
// A map over an image, in QCustomPlot: the image in grey underneath and a coarser grid of values (a [CLS] map
// over the patch grid) on top as a semi-transparent colour map, both spanning the same W × H extent, with
// row 0 at the top and the title just above the image. fitImageExtent keeps the pixels square and the image
// centred whatever the shape of its layout cell, so the figure on screen and its PNG/SVG/PDF exports show
// the image undistorted.
#include <QFont>
#include <QString>
#include <qcustomplot.h>

#include "common/matrix.h"

namespace tl {

struct ImageOverlayMap {
  QCPAxisRect* rect = nullptr;  // its four axes frame the image; the top one's label is the title
  QCPColorMap* image = nullptr;
  QCPColorMap* overlay = nullptr;

  MatD values() const;  // the overlay grid as drawn, rows × cols
  void setTitle(const QString& title);
};

// A titled map whose overlay takes its colours and range from `scale`; the caller puts its rect in a layout.
ImageOverlayMap makeImageOverlayMap(QCustomPlot* plot, QCPColorScale* scale, const QFont& titleFont);
// Takes the map's colour maps out of the plot; the caller then removes (deletes) its rect from its layout.
void removeImageOverlayMap(QCustomPlot* plot, const ImageOverlayMap& map);

void fillImage(ImageOverlayMap& map, const MatD& grey);  // H × W, 0 = black, 1 = white
// `values` (rows × cols) stretched over the image: nearest (one block per cell) or bilinear when `smooth`.
void fillOverlay(ImageOverlayMap& map, const MatD& values, double opacity, bool smooth);
// A frame around the map; thicker and coloured for the map the large one repeats.
void setHighlighted(ImageOverlayMap& map, bool on);
// Fits the image into its layout cell with square pixels; call after every layout (QCustomPlot::afterLayout).
void fitImageExtent(ImageOverlayMap& map);

}  // namespace tl
