#include "widgets/plot/colour_maps.h"

#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

// Nine samples at 0, 1/8, ..., 1 of one of matplotlib's maps, interpolated in RGB like viridisGradient().
QCPColorGradient fromStops(const QColor (&stops)[9]) {
  QCPColorGradient g;
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  for (int i = 0; i < 9; ++i) g.setColorStopAt(i / 8.0, stops[i]);
  g.setLevelCount(256);
  return g;
}

QCPColorGradient magmaGradient() {
  const QColor stops[9] = {QColor(0, 0, 4),       QColor(28, 16, 68),   QColor(79, 18, 123),
                           QColor(129, 37, 129),  QColor(181, 54, 122), QColor(229, 80, 100),
                           QColor(251, 135, 97),  QColor(254, 194, 135), QColor(252, 253, 191)};
  return fromStops(stops);
}

QCPColorGradient infernoGradient() {
  const QColor stops[9] = {QColor(0, 0, 4),      QColor(31, 12, 72),   QColor(85, 15, 109),
                           QColor(136, 34, 106), QColor(186, 54, 85),  QColor(227, 89, 51),
                           QColor(249, 142, 9),  QColor(248, 201, 50), QColor(252, 255, 164)};
  return fromStops(stops);
}

}  // namespace

const QStringList& sequentialGradientNames() {
  static const QStringList names{"viridis", "magma", "inferno"};
  return names;
}

QCPColorGradient sequentialGradient(const QString& name) {
  if (name == "magma") return magmaGradient();
  if (name == "inferno") return infernoGradient();
  return viridisGradient();
}

QCPColorGradient greyGradient() {
  QCPColorGradient g;
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setColorStopAt(0, Qt::black);
  g.setColorStopAt(1, Qt::white);
  g.setLevelCount(256);
  return g;
}

}  // namespace tl
