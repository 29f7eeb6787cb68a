#pragma once
// A matrix drawn as a colour map in its own axis rect with a colour scale beside it: row 0 at the top,
// column 0 at the left, one cell per entry. The compare and family views build their small heatmaps
// from this, so they all read the same way as the plan view.
#include <QString>
#include <vector>
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
// The same for a coarse picture of an nRows × nCols token grid: cell (r, c) of `cells` covers display block
// (r, c) (cuda/tile_index.h blockStart: blocks differ in size by at most one), axes in token coordinates, so a
// view of tens of thousands of tokens draws at most `cells` entries. Equals fillMatrixMap when cells is
// nRows × nCols.
void fillBlockMap(MatrixMap& target, const MatD& cells, long long nRows, long long nCols, double lo, double hi);
// Display blocks for n tokens on at most `maxCells` cells: their starts, blocks + 1 entries.
std::vector<long long> displayBlockStarts(long long n, long long maxCells);

// Bars at 0..values.size()-1 with the colour of `color`; returns the bars (owned by the plot).
QCPBars* makeIndexBars(QCPAxis* keyAxis, QCPAxis* valueAxis, const QColor& color);
void fillIndexBars(QCPBars* bars, const VecD& values);

}  // namespace tl
