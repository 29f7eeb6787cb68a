#include "widgets/plot/plot_style.h"

namespace tl {

QCPColorGradient viridisGradient() {
  QCPColorGradient g;
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  // Samples of matplotlib's viridis at 0, 1/8, ..., 1.
  const QColor stops[] = {QColor(68, 1, 84),    QColor(71, 44, 122),  QColor(59, 81, 139),
                          QColor(44, 113, 142), QColor(33, 144, 141), QColor(39, 173, 129),
                          QColor(92, 200, 99),  QColor(170, 220, 50), QColor(253, 231, 37)};
  for (int i = 0; i < 9; ++i) g.setColorStopAt(i / 8.0, stops[i]);
  g.setLevelCount(256);
  return g;
}

QCPColorGradient divergingGradient() {
  QCPColorGradient g;
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  // ColorBrewer RdBu (reversed: negative blue), 9 classes.
  const QColor stops[] = {QColor(33, 102, 172),  QColor(67, 147, 195),  QColor(146, 197, 222),
                          QColor(209, 229, 240), QColor(247, 247, 247), QColor(253, 219, 199),
                          QColor(244, 165, 130), QColor(214, 96, 77),   QColor(178, 24, 43)};
  for (int i = 0; i < 9; ++i) g.setColorStopAt(i / 8.0, stops[i]);
  g.setLevelCount(256);
  return g;
}

QFont captionFont() { return QFont("DejaVu Sans", 10); }

namespace {

// QCustomPlot's default steps include 2.5; indices and steps want 1, 2, 5, 10, 20, ...
class IntegerTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    const double wanted = QCPAxisTicker::getTickStep(range);
    for (double magnitude = 1;; magnitude *= 10)
      for (double m : {1.0, 2.0, 5.0})
        if (m * magnitude >= wanted) return m * magnitude;
  }
};

}  // namespace

QSharedPointer<QCPAxisTicker> integerTicker() { return QSharedPointer<IntegerTicker>::create(); }

void makeLogAxis(QCPAxis* axis) {
  axis->setScaleType(QCPAxis::stLogarithmic);
  auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
  ticker->setLogBase(10);
  ticker->setSubTickCount(0);
  axis->setTicker(ticker);
  axis->setNumberFormat("eb");
  axis->setNumberPrecision(0);
}

void styleAxis(QCPAxis* axis, const QString& label) {
  axis->setLabel(label);
  axis->setLabelFont(QFont("DejaVu Sans", 10));
  axis->setTickLabelFont(QFont("DejaVu Sans", 9));
  axis->setBasePen(QPen(QColor(90, 90, 90)));
  axis->setTickPen(QPen(QColor(90, 90, 90)));
  axis->setSubTickPen(QPen(QColor(140, 140, 140)));
  axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::DotLine));
}

QString operatorCaption(const OperatorSpec& spec) {
  const FamilyInfo& family = OperatorRegistry::builtin().get(spec.family);
  // Families with many parameters (ESP has ten) get more than one line, so headings are never clipped.
  constexpr int kLineLength = 60;
  QString caption = QString::fromStdString(family.title) + "  ·  ";
  int lineStart = 0;
  const QStringList params = QString::fromStdString(formatParams(spec.params, &family.schema)).split(',');
  for (int k = 0; k < params.size(); ++k) {
    if (k > 0) caption += ", ";
    if (caption.size() - lineStart + params[k].size() > kLineLength) {
      caption += "\n";
      lineStart = int(caption.size());
    }
    caption += params[k];
  }
  return caption;
}

}  // namespace tl
