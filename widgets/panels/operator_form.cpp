#include "widgets/panels/operator_form.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "widgets/panels/param_form.h"

namespace tl {

OperatorForm::OperatorForm(const QString& familyObjectName, QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* top = new QFormLayout;
  family_ = new QComboBox(this);
  family_->setObjectName(familyObjectName);
  for (const FamilyInfo& f : OperatorRegistry::builtin().families()) {
    family_->addItem(QString::fromStdString(f.title), QString::fromStdString(f.name));
    family_->setItemData(family_->count() - 1, QString::fromStdString(f.description), Qt::ToolTipRole);
  }
  top->addRow(tr("family"), family_);
  layout->addLayout(top);

  description_ = new QLabel(this);
  description_->setWordWrap(true);
  description_->setStyleSheet("color: palette(mid);");
  layout->addWidget(description_);
  formHost_ = new QVBoxLayout;
  layout->addLayout(formHost_);

  connect(family_, &QComboBox::currentIndexChanged, this, &OperatorForm::onFamilyPicked);
  const FamilyInfo& first = OperatorRegistry::builtin().families().front();
  setSpec(OperatorRegistry::builtin().resolve(first.name, {}));
}

void OperatorForm::showFamily(const FamilyInfo& family, const ParamSet& values) {
  delete form_;
  form_ = new ParamForm(family.schema, values, this);
  formHost_->addWidget(form_);
  description_->setText(QString::fromStdString(family.description));
  connect(form_, &ParamForm::valuesChanged, this, [this] {
    spec_.params = form_->values();
    emit specChanged(spec_);
  });
}

void OperatorForm::setSpec(const OperatorSpec& spec) {
  const bool sameFamily = form_ && spec.family == spec_.family;
  spec_ = spec;
  {
    const QSignalBlocker block(family_);
    family_->setCurrentIndex(family_->findData(QString::fromStdString(spec.family)));
  }
  if (sameFamily) form_->setValues(spec.params);
  else showFamily(OperatorRegistry::builtin().get(spec.family), spec.params);
}

// A new family starts from its schema defaults.
void OperatorForm::onFamilyPicked(int index) {
  const std::string name = family_->itemData(index).toString().toStdString();
  spec_ = OperatorRegistry::builtin().resolve(name, {});
  showFamily(OperatorRegistry::builtin().get(name), spec_.params);
  emit specChanged(spec_);
}

}  // namespace tl
