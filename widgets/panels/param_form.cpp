#include "widgets/panels/param_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>
#include <cmath>

#include "widgets/panels/param_slider.h"

namespace tl {
namespace {

double asNumber(const ParamValue& v) {
  if (auto* i = std::get_if<long long>(&v)) return double(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  return 0;
}

}  // namespace

QString describeParam(const ParamSpec& spec) {
  QString text = QString::fromStdString(spec.description);
  switch (spec.type) {
    case ParamType::Int:
    case ParamType::Real:
      text += QStringLiteral("\nrange %1%2 … %3").arg(spec.minExclusive ? "> " : "").arg(spec.min).arg(spec.max);
      break;
    case ParamType::Choice:
      text += "\none of: ";
      for (size_t i = 0; i < spec.choices.size(); ++i) text += (i ? ", " : "") + QString::fromStdString(spec.choices[i]);
      break;
    default:
      break;
  }
  if (!spec.optional) text += "\ndefault " + QString::fromStdString(formatValue(spec.defaultValue));
  return text;
}

ParamForm::ParamForm(ParamSchema schema, const ParamSet& values, QWidget* parent)
    : QWidget(parent), schema_(std::move(schema)), values_(values) {
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const ParamSpec& spec : schema_.specs()) {
    auto* label = new QLabel(QString::fromStdString(spec.name), this);
    QWidget* control = makeControl(spec);
    const QString tip = describeParam(spec);
    label->setToolTip(tip);
    control->setToolTip(tip);
    form->addRow(label, control);
  }
  setValues(values);
}

void ParamForm::set(const std::string& name, ParamValue value) {
  values_[name] = std::move(value);
  emit valuesChanged();
}

QWidget* ParamForm::makeControl(const ParamSpec& spec) {
  const std::string name = spec.name;
  switch (spec.type) {
    case ParamType::Int:
    case ParamType::Real: {
      auto* slider = new ParamSlider(spec, this);
      const bool isInt = spec.type == ParamType::Int;
      connect(slider, &ParamSlider::valueChanged, this, [this, name, isInt](double v) {
        set(name, isInt ? ParamValue(static_cast<long long>(std::llround(v))) : ParamValue(v));
      });
      showers_[name] = [slider](const ParamValue& v) { slider->setValue(asNumber(v)); };
      return slider;
    }
    case ParamType::Bool: {
      auto* box = new QCheckBox(this);
      box->setObjectName(QString::fromStdString("check:" + name));
      connect(box, &QCheckBox::toggled, this, [this, name](bool on) { set(name, on); });
      showers_[name] = [box](const ParamValue& v) {
        const QSignalBlocker block(box);
        box->setChecked(asNumber(v) != 0);
      };
      return box;
    }
    case ParamType::Choice: {
      auto* combo = new QComboBox(this);
      combo->setObjectName(QString::fromStdString("choice:" + name));
      for (const auto& c : spec.choices) combo->addItem(QString::fromStdString(c));
      connect(combo, &QComboBox::currentTextChanged, this,
              [this, name](const QString& text) { set(name, text.toStdString()); });
      showers_[name] = [combo](const ParamValue& v) {
        const QSignalBlocker block(combo);
        if (auto* s = std::get_if<std::string>(&v)) combo->setCurrentText(QString::fromStdString(*s));
      };
      return combo;
    }
    case ParamType::Path: {
      auto* row = new QWidget(this);
      auto* layout = new QHBoxLayout(row);
      layout->setContentsMargins(0, 0, 0, 0);
      auto* edit = new QLineEdit(row);
      edit->setObjectName(QString::fromStdString("path:" + name));
      auto* browse = new QToolButton(row);
      browse->setText("…");
      layout->addWidget(edit, 1);
      layout->addWidget(browse);
      const bool optional = spec.optional;
      auto commit = [this, name, optional, edit] {
        if (edit->text().isEmpty() && optional) {
          values_.erase(name);
          emit valuesChanged();
        } else {
          set(name, edit->text().toStdString());
        }
      };
      connect(edit, &QLineEdit::editingFinished, this, commit);
      connect(browse, &QToolButton::clicked, this, [this, edit, commit] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Choose file"), edit->text());
        if (path.isEmpty()) return;
        edit->setText(path);
        commit();
      });
      showers_[name] = [edit](const ParamValue& v) {
        const QSignalBlocker block(edit);
        if (auto* s = std::get_if<std::string>(&v)) edit->setText(QString::fromStdString(*s));
      };
      return row;
    }
  }
  return new QWidget(this);
}

void ParamForm::setValues(const ParamSet& values) {
  values_ = values;
  for (const auto& [name, value] : values_) {
    if (auto it = showers_.find(name); it != showers_.end()) it->second(value);
  }
}

}  // namespace tl
