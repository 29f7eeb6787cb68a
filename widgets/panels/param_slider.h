#pragma once
// One numeric parameter as a slider with numeric entry beside it. The slider covers the spec's UI range
// (linear for Int and plain Real, logarithmic for logScale Reals such as eps); the entry accepts the whole
// valid range, so a value beyond the slider's reach can still be typed.
#include <QWidget>

#include "common/params.h"

class QSlider;
class QAbstractSpinBox;
class QSpinBox;
class QDoubleSpinBox;

namespace tl {

class ParamSlider : public QWidget {
  Q_OBJECT
 public:
  ParamSlider(const ParamSpec& spec, QWidget* parent = nullptr);

  double value() const { return value_; }
  // Programmatic update (loading a session): moves both controls without emitting valueChanged.
  void setValue(double value);

  QSlider* slider() const { return slider_; }
  const ParamSpec& spec() const { return spec_; }

 signals:
  void valueChanged(double value);

 private:
  static constexpr int kRealSteps = 1000;  // slider resolution for Real parameters

  int sliderPosition(double value) const;
  double valueAtPosition(int position) const;
  void showValue(double value);  // updates both controls, signals blocked
  void onSliderMoved(int position);
  void onEntryChanged(double value);

  ParamSpec spec_;
  double value_ = 0;
  QSlider* slider_ = nullptr;
  QSpinBox* intEntry_ = nullptr;
  QDoubleSpinBox* realEntry_ = nullptr;
};

}  // namespace tl
