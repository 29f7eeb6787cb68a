#include "widgets/views/prediction_view.h"

#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "data/fashion_mnist.h"
#include "widgets/plot/plot_style.h"
#include "widgets/views/model_captions.h"

namespace tl {
namespace {

// Room right of the longest bar (p = 1) for its percentage.
constexpr double kProbabilityAxisEnd = 1.16;
// Percentages below this are left unlabelled: ten "0.0%" would bury the ones that matter.
constexpr double kSmallestLabelled = 0.005;

const QColor kOriginalColor(31, 119, 180);
const QColor kSwappedColor(230, 115, 0);

// Softmax with the largest logit subtracted first, so large logits cannot overflow.
VecD probabilitiesOf(const VecD& logits) {
  if (logits.size() == 0) return logits;
  const VecD e = (logits.array() - logits.maxCoeff()).exp();
  return e / e.sum();
}

QFont labelFont() { return QFont("DejaVu Sans", 8); }

QString percent(double p) { return QString::number(100 * p, 'f', 1) + "%"; }

// The true class as the model numbers it: only when the image's dataset label names the same class in the
// model's labels (a model trained on other classes gets no mark, however its indices line up).
int trueClassOf(const ModelRun& model) {
  const std::optional<int>& label = model.image.label;
  const std::vector<std::string>& names = model.config.labels;
  const auto& dataset = fashionMnistClassNames();
  if (!label || *label < 0 || *label >= int(names.size()) || *label >= int(dataset.size())) return -1;
  return QString::fromStdString(names[size_t(*label)])
                     .compare(QString::fromStdString(dataset[size_t(*label)]), Qt::CaseInsensitive) == 0
             ? *label
             : -1;
}

}  // namespace

PredictionView::PredictionView(QWidget* parent) : FamilyView(parent) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(2, 2, 2, 2);
  QCPLayoutGrid* grid = makePlot(content, tr("Prediction"), QSize(300, 150), captionFont());
  rect_ = new QCPAxisRect(plot_);
  grid->addElement(0, 0, rect_);
  legend_ = new QCPLegend;
  grid->addElement(1, 0, legend_);
  legend_->setLayer("legend");
  legend_->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend_->setFont(captionFont());
  legend_->setBorderPen(Qt::NoPen);
  grid->setRowStretchFactors({1, 0.001});

  QCPAxis* classes = rect_->axis(QCPAxis::atLeft);
  QCPAxis* probability = rect_->axis(QCPAxis::atBottom);
  styleAxis(probability, tr("probability (softmax of the logits)"));
  styleAxis(classes, QString());
  classes->setRangeReversed(true);  // class 0 at the top, as the labels are listed
  classes->grid()->setVisible(false);
  classes->setTickLabelFont(QFont("DejaVu Sans", 9));  // ten classes in a short dock
  probability->setRange(0, kProbabilityAxisEnd);
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(0.2);
  probability->setTicker(ticker);

  // The band is made first so it is drawn under the bars.
  trueBand_ = new QCPItemRect(plot_);
  trueBand_->setClipAxisRect(rect_);
  for (QCPItemPosition* corner : {trueBand_->topLeft, trueBand_->bottomRight}) corner->setAxes(probability, classes);
  trueBand_->setPen(Qt::NoPen);
  trueBand_->setBrush(QColor(60, 170, 60, 55));
  trueBand_->setVisible(false);
  original_ = new QCPBars(classes, probability);
  swapped_ = new QCPBars(classes, probability);
  for (auto [bars, color] : {std::pair{original_, kOriginalColor}, std::pair{swapped_, kSwappedColor}}) {
    QColor fill = color;
    fill.setAlpha(210);
    bars->setBrush(fill);
    bars->setPen(QPen(color.darker(130), 0.8));
  }
  layout->addWidget(plot_, 1);
  setContent(content);
  connect(plot_, &QCustomPlot::afterLayout, this, &PredictionView::showLabelsThatFit);
}

void PredictionView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  if (!result_ || !result_->model) {
    showMessage(tr("This view shows a vision transformer's class probabilities for its image, with and without "
                   "the operator swapped in.\nThe source is not a model: pick \"Model checkpoint\" in the Source "
                   "panel and open a checkpoint."));
    if (result_) emit redrawn(result_->requestId);
    return;
  }
  showContent();
  const ModelRun& model = *result_->model;
  const VecD original = probabilitiesOf(model.trace.logits);
  const bool swapped = result_->swapped.has_value();

  for (QCPItemText* label : valueLabels_) plot_->removeItem(label);
  valueLabels_.clear();
  // Side by side when both runs are shown, each bar a little under half a class row.
  drawBars(original_, original, swapped ? -0.2 : 0, swapped ? 0.38 : 0.7);
  const VecD other = swapped ? probabilitiesOf(result_->swapped->logits) : VecD();
  drawBars(swapped_, other, 0.2, 0.38);
  swapped_->setVisible(swapped);

  const QString own = tr("original (the model's own %1)").arg(familyTitle(model.config.attention));
  const QString with = tr("with %1").arg(swapCaption(*result_));
  legend_->clearItems();
  original_->setName(own);
  original_->addToLegend(legend_);
  if (swapped) {
    swapped_->setName(with);
    swapped_->addToLegend(legend_);
  }
  markTrueClass(trueClassOf(model));

  auto prediction = [&](const VecD& p) {
    Eigen::Index best = 0;
    p.maxCoeff(&best);
    return QString("%1 %2").arg(QString::fromStdString(model.config.labels.at(size_t(best))), percent(p[best]));
  };
  QString line = tr("original: %1").arg(prediction(original));
  if (swapped) line += tr("  ·  %1: %2").arg(with, prediction(other));
  heading_->setText(line + "\n" + QString::fromStdString(model.image.description));
  plot_->replot(QCustomPlot::rpImmediateRefresh);
  emit redrawn(result_->requestId);
}

// Bars at class k + offset, each with its percentage just past its end.
void PredictionView::drawBars(QCPBars* bars, const VecD& probabilities, double offset, double width) {
  QVector<double> keys, values;
  for (Eigen::Index k = 0; k < probabilities.size(); ++k) {
    keys << double(k) + offset;
    values << probabilities[k];
    if (probabilities[k] < kSmallestLabelled) continue;
    auto* label = new QCPItemText(plot_);
    label->setClipAxisRect(rect_);
    label->position->setAxes(bars->valueAxis(), bars->keyAxis());
    label->position->setCoords(probabilities[k], double(k) + offset);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->setPadding(QMargins(4, 0, 0, 0));
    label->setFont(labelFont());
    label->setColor(bars->pen().color());
    label->setText(percent(probabilities[k]));
    valueLabels_.push_back(label);
  }
  bars->setWidth(width);
  bars->setData(keys, values, true);
}

// A percentage needs a bar as tall as its text; in a short dock the axis alone tells the values.
void PredictionView::showLabelsThatFit() {
  const QCPAxis* classes = rect_->axis(QCPAxis::atLeft);
  const double barPixels = std::abs(classes->coordToPixel(original_->width()) - classes->coordToPixel(0));
  const bool fit = barPixels >= 0.9 * QFontMetrics(labelFont()).height();
  for (QCPItemText* label : valueLabels_) label->setVisible(fit);
}

void PredictionView::markTrueClass(int cls) {
  trueClass_ = cls;
  const std::vector<std::string>& names = result_->model->config.labels;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int k = 0; k < int(names.size()); ++k) {
    const QString name = QString::fromStdString(names[size_t(k)]);
    ticker->addTick(k, k == cls ? tr("%1 (true)").arg(name) : name);
  }
  QCPAxis* classes = rect_->axis(QCPAxis::atLeft);
  classes->setTicker(ticker);
  classes->setRange(-0.6, double(names.size()) - 0.4);
  trueBand_->setVisible(cls >= 0);
  trueBand_->topLeft->setCoords(0, cls - 0.48);
  trueBand_->bottomRight->setCoords(kProbabilityAxisEnd, cls + 0.48);
}

int PredictionView::classCount() const { return showingContent() ? original_->data()->size() : 0; }
double PredictionView::probability(int cls) const { return original_->data()->at(cls)->value; }
double PredictionView::swappedProbability(int cls) const {
  return showingSwapped() ? swapped_->data()->at(cls)->value : std::numeric_limits<double>::quiet_NaN();
}
bool PredictionView::showingSwapped() const { return showingContent() && swapped_->visible() && swapped_->data()->size() > 0; }
int PredictionView::markedTrueClass() const { return trueClass_; }
QString PredictionView::heading() const { return heading_->text(); }
QString PredictionView::classLabel(int cls) const {
  return rect_->axis(QCPAxis::atLeft)->ticker().staticCast<QCPAxisTickerText>()->ticks().value(cls);
}

}  // namespace tl
