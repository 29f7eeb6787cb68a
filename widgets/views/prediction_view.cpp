#include "widgets/views/prediction_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "data/fashion_mnist.h"
#include "widgets/plot/plot_style.h"
#include "widgets/views/model_captions.h"

namespace tl {
namespace {

// Room right of the longest bar (p = 1) for its percentage.
constexpr double kProbabilityAxisEnd = 1.16;
// Below this largest shown probability (a thousand classes share the mass) the axis zooms to the bars.
constexpr double kZoomBelow = 0.5;
// Percentages below this share of the axis are left unlabelled: ten "0.0%" would bury the ones that matter.
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
QFont classFont() { return QFont("DejaVu Sans", 9); }  // ten classes in a short dock

// The plot's height besides its class rows: heading (two lines), probability axis and legend.
constexpr int kPlotFramePixels = 120;

QString percent(double p) { return QString::number(100 * p, 'f', p < 0.01 ? 2 : 1) + "%"; }

// Class names as long as ImageNet's ("tench, Tinca tinca", "great white shark, white shark, man-eater, ...") would
// take the plot's width from the bars.
constexpr int kLongestClassName = 28;
QString className(const std::string& name) {
  const QString text = QString::fromStdString(name);
  return text.size() <= kLongestClassName ? text : text.left(kLongestClassName - 1) + QChar(0x2026);
}

// The classes to draw, top row first: every class in class order when there are at most k, otherwise the k most
// probable by the larger of the two runs' probabilities (ties by class index), then the true class when it is
// not among them.
std::vector<int> rowsToShow(const VecD& own, const VecD& swapped, int k, int trueClass) {
  std::vector<int> classes(size_t(own.size()));
  std::iota(classes.begin(), classes.end(), 0);
  if (own.size() <= k) return classes;
  auto score = [&](int c) { return swapped.size() ? std::max(own[c], swapped[c]) : own[c]; };
  std::stable_sort(classes.begin(), classes.end(), [&](int a, int b) { return score(a) > score(b); });
  classes.resize(size_t(k));
  if (trueClass >= 0 && std::find(classes.begin(), classes.end(), trueClass) == classes.end())
    classes.push_back(trueClass);
  return classes;
}

// 1 for the most probable class of the model's own run.
int rankOf(const VecD& own, int cls) { return 1 + int((own.array() > own[cls]).count()); }

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
  classes->setTickLabelFont(classFont());
  probability->setRange(0, kProbabilityAxisEnd);

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
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(4, 0, 4, 0);
  controls->addWidget(new QLabel(tr("show the top"), content));
  topK_ = new QSpinBox(content);
  topK_->setObjectName("predictionTopK");
  topK_->setRange(1, 30);
  topK_->setValue(kDefaultTopK);
  topK_->setToolTip(tr("How many of the most probable classes get a bar (the true class is always shown)"));
  controls->addWidget(topK_);
  ofClasses_ = new QLabel(content);
  controls->addWidget(ofClasses_);
  controls->addStretch(1);
  layout->addLayout(controls);
  layout->addWidget(plot_, 1);
  setContent(content);
  connect(plot_, &QCustomPlot::afterLayout, this, &PredictionView::showLabelsThatFit);
  connect(topK_, &QSpinBox::valueChanged, this, [this] {
    if (result_ && result_->model) redraw();
  });
}

nlohmann::json PredictionView::saveState() const { return {{"top_k", topK_->value()}}; }

void PredictionView::restoreState(const nlohmann::json& state) {
  topK_->setValue(stateValue(state, "top_k", kDefaultTopK));
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
  ownProbabilities_ = probabilitiesOf(model.trace.logits);
  swappedProbabilities_ = result_->swapped ? probabilitiesOf(result_->swapped->logits) : VecD();
  redraw();
  emit redrawn(result_->requestId);
}

void PredictionView::redraw() {
  const ModelRun& model = *result_->model;
  const bool swapped = swappedProbabilities_.size() > 0;
  const int trueClass = trueClassOf(model);
  rows_ = rowsToShow(ownProbabilities_, swappedProbabilities_, topK_->value(), trueClass);
  ofClasses_->setText(tr("of %1 classes").arg(ownProbabilities_.size()));

  showProbabilityRange();
  for (QCPItemText* label : valueLabels_) plot_->removeItem(label);
  valueLabels_.clear();
  // Side by side when both runs are shown, each bar a little under half a class row.
  drawBars(original_, ownProbabilities_, swapped ? -0.2 : 0, swapped ? 0.38 : 0.7);
  drawBars(swapped_, swappedProbabilities_, 0.2, 0.38);
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
  labelRows(trueClass);
  // Every class name needs its own line: the dock grows (or the window's other docks give way) rather than the
  // names overprinting one another.
  plot_->setMinimumHeight(kPlotFramePixels + int(rows_.size()) * (QFontMetrics(classFont()).height() + 1));

  auto prediction = [&](const VecD& p) {
    Eigen::Index best = 0;
    p.maxCoeff(&best);
    return QString("%1 %2").arg(className(model.config.labels.at(size_t(best))), percent(p[best]));
  };
  QString line = tr("original: %1").arg(prediction(ownProbabilities_));
  if (swapped) line += tr("  ·  %1: %2").arg(with, prediction(swappedProbabilities_));
  heading_->setText(line + "\n" + QString::fromStdString(model.image.description));
  plot_->replot(QCustomPlot::rpQueuedRefresh);
}

// Probabilities 0 to 1 in steps of 0.2; when every shown bar is short (a thousand classes sharing the mass, an
// untrained model), 0 to the longest, so the bars and their differences stay visible. The numbers on the axis say
// which.
void PredictionView::showProbabilityRange() {
  double longest = 0;
  for (int cls : rows_) {
    longest = std::max(longest, ownProbabilities_[cls]);
    if (swappedProbabilities_.size() > 0) longest = std::max(longest, swappedProbabilities_[cls]);
  }
  QCPAxis* probability = rect_->axis(QCPAxis::atBottom);
  if (longest >= kZoomBelow || longest <= 0) {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(0.2);
    probability->setTicker(ticker);
    probability->setRange(0, kProbabilityAxisEnd);
  } else {
    probability->setTicker(QSharedPointer<QCPAxisTicker>::create());
    probability->setRange(0, longest * kProbabilityAxisEnd);
  }
}

// One bar per shown row (row + offset), each with its percentage just past its end.
void PredictionView::drawBars(QCPBars* bars, const VecD& probabilities, double offset, double width) {
  QVector<double> keys, values;
  for (size_t row = 0; row < rows_.size() && probabilities.size() > 0; ++row) {
    const double p = probabilities[rows_[row]];
    keys << double(row) + offset;
    values << p;
    if (p < kSmallestLabelled * bars->valueAxis()->range().upper) continue;
    auto* label = new QCPItemText(plot_);
    label->setClipAxisRect(rect_);
    label->position->setAxes(bars->valueAxis(), bars->keyAxis());
    label->position->setCoords(p, double(row) + offset);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->setPadding(QMargins(4, 0, 0, 0));
    label->setFont(labelFont());
    label->setColor(bars->pen().color());
    label->setText(percent(p));
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

// Class names as tick labels, one per row; the true class is named so and, when it is outside the top k (on the row
// after them), given its rank in the model's own run.
void PredictionView::labelRows(int trueClass) {
  trueClass_ = trueClass;
  const std::vector<std::string>& names = result_->model->config.labels;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  int trueRow = -1;
  for (size_t row = 0; row < rows_.size(); ++row) {
    const int cls = rows_[row];
    QString name = className(names[size_t(cls)]);
    if (cls == trueClass) {
      trueRow = int(row);
      name = int(row) >= topK_->value() ? tr("%1 (true, #%2)").arg(name).arg(rankOf(ownProbabilities_, cls))
                                        : tr("%1 (true)").arg(name);
    }
    ticker->addTick(double(row), name);
  }
  QCPAxis* classes = rect_->axis(QCPAxis::atLeft);
  classes->setTicker(ticker);
  classes->setRange(-0.6, double(rows_.size()) - 0.4);
  trueBand_->setVisible(trueRow >= 0);
  trueBand_->topLeft->setCoords(0, trueRow - 0.48);
  trueBand_->bottomRight->setCoords(rect_->axis(QCPAxis::atBottom)->range().upper, trueRow + 0.48);
}

int PredictionView::classCount() const { return showingContent() ? int(ownProbabilities_.size()) : 0; }
double PredictionView::probability(int cls) const { return ownProbabilities_[cls]; }
double PredictionView::swappedProbability(int cls) const {
  return showingSwapped() ? swappedProbabilities_[cls] : std::numeric_limits<double>::quiet_NaN();
}
bool PredictionView::showingSwapped() const { return showingContent() && swappedProbabilities_.size() > 0; }
int PredictionView::markedTrueClass() const { return trueClass_; }
QString PredictionView::heading() const { return heading_->text(); }
QString PredictionView::classLabel(int cls) const {
  const auto row = std::find(rows_.begin(), rows_.end(), cls);
  if (row == rows_.end()) return {};
  return rect_->axis(QCPAxis::atLeft)->ticker().staticCast<QCPAxisTickerText>()->ticks().value(double(row - rows_.begin()));
}
std::vector<int> PredictionView::shownClasses() const { return rows_; }
int PredictionView::topK() const { return topK_->value(); }
void PredictionView::setTopK(int k) { topK_->setValue(k); }

}  // namespace tl
