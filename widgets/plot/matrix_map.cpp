#include "widgets/plot/matrix_map.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cuda/tile_index.h"
#include "widgets/plot/plot_style.h"

namespace tl {

double MatrixMap::cell(int row, int column) const {
  if (row < 0 || column < 0 || row >= rows() || column >= columns())
    return std::numeric_limits<double>::quiet_NaN();
  return map->data()->cell(column, row);
}
int MatrixMap::rows() const { return map->data()->valueSize(); }
int MatrixMap::columns() const { return map->data()->keySize(); }

MatrixMap addMatrixMap(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, const QString& rowLabel,
                       const QString& columnLabel, const QCPColorGradient& gradient) {
  MatrixMap m;
  auto* cellGrid = new QCPLayoutGrid;
  grid->addElement(row, column, cellGrid);
  m.title = new QCPTextElement(plot, QString(), captionFont());
  m.rect = new QCPAxisRect(plot);
  m.scale = new QCPColorScale(plot);
  cellGrid->addElement(0, 0, m.title);
  cellGrid->addElement(1, 0, m.rect);
  cellGrid->addElement(1, 1, m.scale);
  cellGrid->setColumnStretchFactors({1, 0.08});
  cellGrid->setRowStretchFactors({0.01, 1});
  cellGrid->setColumnSpacing(3);
  auto* rows = new QCPMarginGroup(plot);
  m.rect->setMarginGroup(QCP::msTop | QCP::msBottom, rows);
  m.scale->setMarginGroup(QCP::msTop | QCP::msBottom, rows);

  QCPAxis* x = m.rect->axis(QCPAxis::atBottom);
  QCPAxis* y = m.rect->axis(QCPAxis::atLeft);
  y->setRangeReversed(true);
  styleAxis(x, columnLabel);
  styleAxis(y, rowLabel);
  for (QCPAxis* a : {x, y}) {
    a->grid()->setVisible(false);
    a->setTicker(integerTicker());
  }
  m.map = new QCPColorMap(x, y);
  m.map->setInterpolate(false);
  m.map->setTightBoundary(true);
  m.map->setColorScale(m.scale);
  m.scale->setGradient(gradient);
  m.scale->setBarWidth(10);
  m.scale->axis()->setTickLabelFont(QFont("DejaVu Sans", 8));
  return m;
}

void fillMatrixMap(MatrixMap& target, const MatD& m, double lo, double hi) {
  fillBlockMap(target, m, m.rows(), m.cols(), lo, hi);
}

std::vector<long long> displayBlockStarts(long long n, long long maxCells) {
  const long long blocks = cuda::displayBlocks(n, maxCells);
  std::vector<long long> starts;
  for (long long b = 0; b <= blocks; ++b) starts.push_back(cuda::blockStart(b, n, blocks));
  return starts;
}

void fillBlockMap(MatrixMap& target, const MatD& cells, long long nRows, long long nCols, double lo, double hi) {
  const int rows = int(cells.rows()), cols = int(cells.cols());
  // Cell centres in token coordinates: the first and last blocks' centres span the map.
  const auto centre = [](long long n, long long blocks, long long b) {
    return 0.5 * double(cuda::blockStart(b, n, blocks) + cuda::blockStart(b + 1, n, blocks) - 1);
  };
  QCPColorMapData* data = target.map->data();
  data->setSize(cols, rows);
  data->setRange(QCPRange(centre(nCols, cols, 0), centre(nCols, cols, std::max(cols - 1, 0))),
                 QCPRange(centre(nRows, rows, 0), centre(nRows, rows, std::max(rows - 1, 0))));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) data->setCell(j, i, cells(i, j));
  if (!(hi > lo)) hi = lo + 1;  // a constant matrix still gets a valid scale
  target.map->setDataRange(QCPRange(lo, hi));
  target.map->keyAxis()->setRange(-0.5, double(nCols) - 0.5);
  target.map->valueAxis()->setRange(-0.5, double(nRows) - 0.5);
}

QCPBars* makeIndexBars(QCPAxis* keyAxis, QCPAxis* valueAxis, const QColor& color) {
  auto* bars = new QCPBars(keyAxis, valueAxis);
  bars->setWidth(0.8);
  QColor fill = color;
  fill.setAlpha(190);
  bars->setBrush(fill);
  bars->setPen(QPen(color.darker(130), 0.8));
  return bars;
}

void fillIndexBars(QCPBars* bars, const VecD& values) {
  QVector<double> keys(int(values.size())), v(int(values.size()));
  for (int k = 0; k < values.size(); ++k) keys[k] = k, v[k] = values[k];
  bars->setData(keys, v, true);
  const double hi = values.size() ? std::max(values.maxCoeff(), 0.0) : 1.0;
  const double lo = values.size() ? std::min(values.minCoeff(), 0.0) : 0.0;
  bars->valueAxis()->setRange(lo * 1.1, hi > 0 ? hi * 1.12 : 1.0);
  bars->keyAxis()->setRange(-0.7, std::max<double>(double(values.size()) - 0.3, 0.7));
}

}  // namespace tl
