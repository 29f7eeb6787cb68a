#pragma once
// One operator's controls: the family picker (every family the registry knows), its description and
// that family's parameters, generated from its schema. The operator panel shows one for the primary
// operator and, in compare mode, a second for the operator it is compared with.
#include <QWidget>

#include "ops/registry.h"

class QComboBox;
class QLabel;
class QVBoxLayout;

namespace tl {

class ParamForm;

class OperatorForm : public QWidget {
  Q_OBJECT
 public:
  // `familyObjectName` names the picker for tests and style sheets ("operatorFamily", "compareFamily").
  explicit OperatorForm(const QString& familyObjectName, QWidget* parent = nullptr);

  // Shows `spec` without emitting specChanged.
  void setSpec(const OperatorSpec& spec);
  const OperatorSpec& spec() const { return spec_; }
  QComboBox* familyPicker() const { return family_; }

 signals:
  void specChanged(const tl::OperatorSpec& spec);

 private:
  void showFamily(const FamilyInfo& family, const ParamSet& values);
  void onFamilyPicked(int index);

  OperatorSpec spec_;
  QComboBox* family_ = nullptr;
  QLabel* description_ = nullptr;
  QVBoxLayout* formHost_ = nullptr;
  ParamForm* form_ = nullptr;
};

}  // namespace tl
