#include "widgets/panels/param_slider.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QSlider>
#include <QSpinBox>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace tl {
namespace {

// Shows reals in %g form: eps = 0.001 must not read "0.00".
class CompactDoubleSpinBox : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;
  QString textFromValue(double value) const override { return locale().toString(value, 'g', 6); }
  double valueFromText(const QString& text) const override { return locale().toDouble(text); }
  QValidator::State validate(QString& text, int&) const override {
    bool ok = false;
    locale().toDouble(text, &ok);
    return ok ? QValidator::Acceptable : QValidator::Intermediate;
  }
};

// QDoubleSpinBox rounds every value to `decimals` places; Qt's largest setting keeps every double,
// so a session's eps = 1e-300 shows as itself instead of being rounded (or clamped) to a larger value.
constexpr int kAllDecimals = DBL_MAX_10_EXP + DBL_DIG;

double entryMin(const ParamSpec& spec) {
  if (!spec.minExclusive) return spec.min;
  // The smallest double strictly inside an open lower bound (eps > 0): the entry accepts whatever the
  // schema accepts, and the operator says when a value is too small for its precision.
  return std::nextafter(spec.min, std::numeric_limits<double>::infinity());
}

int clampToInt(double v) {
  return int(std::clamp(v, double(std::numeric_limits<int>::min()), double(std::numeric_limits<int>::max())));
}

}  // namespace

ParamSlider::ParamSlider(const ParamSpec& spec, QWidget* parent) : QWidget(parent), spec_(spec) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QString::fromStdString("slider:" + spec.name));
  layout->addWidget(slider_, 1);

  if (spec.type == ParamType::Int) {
    slider_->setRange(clampToInt(spec.sliderMin()), clampToInt(spec.sliderMax()));
    intEntry_ = new QSpinBox(this);
    intEntry_->setObjectName(QString::fromStdString("entry:" + spec.name));
    intEntry_->setRange(clampToInt(std::ceil(entryMin(spec))), clampToInt(spec.max));
    intEntry_->setMinimumWidth(70);
    layout->addWidget(intEntry_);
    connect(intEntry_, &QSpinBox::valueChanged, this, [this](int v) { onEntryChanged(v); });
  } else {
    slider_->setRange(0, kRealSteps);
    realEntry_ = new CompactDoubleSpinBox(this);
    realEntry_->setObjectName(QString::fromStdString("entry:" + spec.name));
    realEntry_->setDecimals(kAllDecimals);  // display is %g; this only keeps small values from rounding
    realEntry_->setRange(entryMin(spec), spec.max);
    realEntry_->setMinimumWidth(80);
    if (spec.logScale) realEntry_->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    else realEntry_->setSingleStep((spec.sliderMax() - spec.sliderMin()) / 100.0);
    layout->addWidget(realEntry_);
    connect(realEntry_, &QDoubleSpinBox::valueChanged, this, [this](double v) { onEntryChanged(v); });
  }
  connect(slider_, &QSlider::valueChanged, this, &ParamSlider::onSliderMoved);
}

int ParamSlider::sliderPosition(double value) const {
  if (spec_.type == ParamType::Int) return clampToInt(std::round(value));
  const double lo = spec_.sliderMin(), hi = spec_.sliderMax();
  double t = 0;
  if (spec_.logScale && lo > 0) t = std::log(std::max(value, lo) / lo) / std::log(hi / lo);
  else t = (value - lo) / (hi - lo);
  return int(std::round(std::clamp(t, 0.0, 1.0) * kRealSteps));
}

double ParamSlider::valueAtPosition(int position) const {
  if (spec_.type == ParamType::Int) return position;
  const double lo = spec_.sliderMin(), hi = spec_.sliderMax();
  const double t = double(position) / kRealSteps;
  const double v = (spec_.logScale && lo > 0) ? lo * std::pow(hi / lo, t) : lo + t * (hi - lo);
  // Three significant digits: slider values read as typed ones (0.0316, not 0.031622776...).
  return QString::number(v, 'g', 3).toDouble();
}

void ParamSlider::setValue(double value) {
  value_ = value;
  showValue(value);
}

void ParamSlider::showValue(double value) {
  const QSignalBlocker blockSlider(slider_);
  slider_->setValue(sliderPosition(value));
  if (intEntry_) {
    const QSignalBlocker block(intEntry_);
    intEntry_->setValue(clampToInt(std::round(value)));
  } else {
    const QSignalBlocker block(realEntry_);
    realEntry_->setValue(value);
  }
}

void ParamSlider::onSliderMoved(int position) {
  const double v = valueAtPosition(position);
  if (v == value_) return;
  value_ = v;
  if (intEntry_) {
    const QSignalBlocker block(intEntry_);
    intEntry_->setValue(position);
  } else {
    const QSignalBlocker block(realEntry_);
    realEntry_->setValue(v);
  }
  emit valueChanged(v);
}

void ParamSlider::onEntryChanged(double value) {
  if (value == value_) return;
  value_ = value;
  const QSignalBlocker block(slider_);
  slider_->setValue(sliderPosition(value));
  emit valueChanged(value);
}

}  // namespace tl
