#pragma once
// A matrix drawn as a colour map in its own axis rect with a colour scale beside it: row 0 at the top,
// column 0 at the left, one cell per entry. The compare and family views build their small heatmaps
// from this, so they all read the same way as the plan view.
#include <QString>
#include <qcustomplot.h>

#include "common/matrix.h"

namespace tl {

struct MatrixMap {
  QCPAxisRect* rect = nullptr;
  QCPColorMap* map = nullptr;
  QCPColorScale* scale = nullptr;
  QCPTextElement* title = nullptr;

  // Value at (row, column) as drawn; NaN outside the matrix.
  double cell(int row, int column) const;
  int rows() const;
  int columns() const;
};

// Adds a titled map and its scale to `grid` at (row, column): title above, map and scale side by side.
MatrixMap addMatrixMap(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, const QString& rowLabel,
                       const QString& columnLabel, const QCPColorGradient& gradient);
// Draws `m` over the data range [lo, hi] (a zero-width range is widened so the scale stays valid).
void fillMatrixMap(MatrixMap& target, const MatD& m, double lo, double hi);

// Bars at 0..values.size()-1 with the colour of `color`; returns the bars (owned by the plot).
QCPBars* makeIndexBars(QCPAxis* keyAxis, QCPAxis* valueAxis, const QColor& color);
void fillIndexBars(QCPBars* bars, const VecD& values);

}  // namespace tl
