#pragma once
// The operator dock: family picker (every family the registry knows) and that family's parameters,
// generated from its schema, plus the session's precision.
#include <QWidget>

#include "ops/registry.h"
#include "session/session.h"

class QComboBox;
class QLabel;
class QVBoxLayout;

namespace tl {

class ParamForm;

class OperatorPanel : public QWidget {
  Q_OBJECT
 public:
  explicit OperatorPanel(QWidget* parent = nullptr);

  // Shows `spec` without emitting specChanged (used when a session is opened).
  void setSpec(const OperatorSpec& spec);
  void setPrecision(Precision precision);
  const OperatorSpec& spec() const { return spec_; }

 signals:
  void specChanged(const tl::OperatorSpec& spec);
  void precisionChanged(tl::Precision precision);

 private:
  void showFamily(const FamilyInfo& family, const ParamSet& values);
  void onFamilyPicked(int index);

  OperatorSpec spec_;
  QComboBox* family_ = nullptr;
  QComboBox* precision_ = nullptr;
  QLabel* description_ = nullptr;
  QVBoxLayout* formHost_ = nullptr;
  ParamForm* form_ = nullptr;
};

}  // namespace tl
