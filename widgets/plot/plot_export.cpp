#include "widgets/plot/plot_export.h"

#include <QBuffer>
#include <QPageLayout>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <qcustomplot.h>

#include "common/errors.h"
#include "io/atomic_file.h"

namespace tl {
namespace {

QByteArray renderPng(QCustomPlot& plot, const ExportSettings& s) {
  const QPixmap pixmap = plot.toPixmap(s.width, s.height, s.scale);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (pixmap.isNull() || !pixmap.save(&buffer, "PNG")) throw Error("could not encode the figure as PNG");
  return bytes;
}

QByteArray renderSvg(QCustomPlot& plot, const ExportSettings& s) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(QSize(s.width, s.height));
  svg.setViewBox(QRect(0, 0, s.width, s.height));
  svg.setTitle("TransportLens figure");
  QCPPainter painter;
  painter.begin(&svg);
  plot.toPainter(&painter, s.width, s.height);
  painter.end();
  return bytes;
}

// A page exactly width×height points at 72 dpi, so one plot pixel is one point and fonts keep their size.
QByteArray renderPdf(QCustomPlot& plot, const ExportSettings& s) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QPdfWriter pdf(&buffer);
  pdf.setCreator("TransportLens");
  pdf.setResolution(72);
  pdf.setPageLayout(QPageLayout(QPageSize(QSizeF(s.width, s.height), QPageSize::Point), QPageLayout::Portrait,
                                QMarginsF(0, 0, 0, 0)));
  QCPPainter painter;
  painter.begin(&pdf);
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  plot.toPainter(&painter, s.width, s.height);
  painter.end();
  return bytes;
}

}  // namespace

QByteArray renderPlot(QCustomPlot& plot, const std::string& format, const ExportSettings& settings) {
  if (format == "png") return renderPng(plot, settings);
  if (format == "svg") return renderSvg(plot, settings);
  if (format == "pdf") return renderPdf(plot, settings);
  throw InvalidArgument("unsupported figure format '" + format + "' (use png, svg or pdf)");
}

void exportPlot(QCustomPlot& plot, const std::string& path, const std::string& format,
                const ExportSettings& settings) {
  const QByteArray bytes = renderPlot(plot, format, settings);
  writeFileAtomically(path, std::string(bytes.constData(), size_t(bytes.size())));
}

}  // namespace tl
