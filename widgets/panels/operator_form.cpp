#include "widgets/panels/operator_form.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QStringList>
#include <QUrl>
#include <QVBoxLayout>

#include "widgets/panels/param_form.h"

namespace tl {
namespace {

// The one-line description, the backends this build has for the family, and a link to its page in docs/.
QString familyDescription(const FamilyInfo& family) {
  QStringList backends;
  for (Backend b : family.backends) backends << backendName(b);
  const QString page = QStringLiteral("docs/operators/%1.md").arg(QString::fromStdString(family.name));
  const QString url = QUrl::fromLocalFile(QStringLiteral(TL_SOURCE_DIR "/") + page).toString();
  return QStringLiteral("%1<br>runs on: %2 · <a href=\"%3\">%4</a>")
      .arg(QString::fromStdString(family.description).toHtmlEscaped(), backends.join(", "), url, page);
}

}  // namespace

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
  description_->setObjectName("familyDescription");
  description_->setWordWrap(true);
  description_->setTextFormat(Qt::RichText);
  description_->setOpenExternalLinks(true);  // the family's page in docs/ opens in the desktop's viewer
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
  description_->setText(familyDescription(family));
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
