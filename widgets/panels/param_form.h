#pragma once
// Generates the controls for a ParamSchema: Int and Real as ParamSlider (log slider when logScale),
// Choice as a combo box, Bool as a check box, Path as a line edit with a file browser. Labels are the
// glossary names; tooltips are the spec's description with its range and default. New operator families
// and generators therefore get their controls without any GUI code.
#include <QWidget>
#include <functional>
#include <map>

#include "common/params.h"

class QFormLayout;

namespace tl {

class ParamForm : public QWidget {
  Q_OBJECT
 public:
  ParamForm(ParamSchema schema, const ParamSet& values, QWidget* parent = nullptr);

  const ParamSet& values() const { return values_; }
  // Programmatic update: shows `values` without emitting valuesChanged.
  void setValues(const ParamSet& values);

 signals:
  void valuesChanged();

 private:
  QWidget* makeControl(const ParamSpec& spec);
  void set(const std::string& name, ParamValue value);

  ParamSchema schema_;
  ParamSet values_;
  // How to show a value in each parameter's control (filled by makeControl).
  std::map<std::string, std::function<void(const ParamValue&)>> showers_;
};

QString describeParam(const ParamSpec& spec);  // tooltip text

}  // namespace tl
