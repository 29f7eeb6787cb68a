#pragma once
// The look shared by the 2-D views: colour map, fonts, axis styling and captions, so exported figures
// from different views sit together in a paper.
#include <QColor>
#include <QString>
#include <qcustomplot.h>

#include "ops/registry.h"

namespace tl {

// Perceptually uniform sequential map (viridis); QCustomPlot 2.1 has no such preset.
QCPColorGradient viridisGradient();
// Diverging map for signed data (differences): blue below 0, white at 0, red above; pair it with a
// symmetric data range [-m, m] so white means "equal".
QCPColorGradient divergingGradient();
void styleAxis(QCPAxis* axis, const QString& label);
// Ticks on whole numbers only (indices, step counts), spaced 1, 2, 5, 10, ... as the range needs.
QSharedPointer<QCPAxisTicker> integerTicker();
QFont captionFont();
// Base-10 logarithmic scale with ticks at the decades, labelled 1e-3, 1e-2, ... (errors, residuals).
void makeLogAxis(QCPAxis* axis);
// "Sinkhorn  T=10, eps=1, mask_mode=subsequence" for titles.
QString operatorCaption(const OperatorSpec& spec);

// Row quantities (queries) and column quantities (keys) keep one colour in every view.
inline QColor rowColor() { return QColor(31, 119, 180); }
inline QColor colColor() { return QColor(230, 115, 0); }

}  // namespace tl
