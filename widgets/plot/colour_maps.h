#pragma once
// The sequential colour maps a researcher can pick for attention overlays (matplotlib's perceptually
// uniform viridis, magma and inferno), by the names sessions store, and the grey ramp images are drawn in.
#include <QStringList>
#include <qcustomplot.h>

namespace tl {

// "viridis", "magma", "inferno", in the order pickers list them.
const QStringList& sequentialGradientNames();
// The gradient named `name`; viridis for names it does not know (a session from a newer version).
QCPColorGradient sequentialGradient(const QString& name);
// Black at 0 to white at 1: an image's pixel values as they are.
QCPColorGradient greyGradient();

}  // namespace tl
