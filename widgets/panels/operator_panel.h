#pragma once
// The operator dock: the primary operator's form, the session's precision and device (cpu, cuda, auto; the
// GPU entries say why when there is no usable device), and "compare with": a second
// operator form (the same OperatorForm) that makes the session hold two operators. Turning compare off
// returns the session to one operator.
#include <QWidget>
#include <vector>

#include "ops/registry.h"
#include "session/session.h"

class QCheckBox;
class QComboBox;

namespace tl {

class OperatorForm;

class OperatorPanel : public QWidget {
  Q_OBJECT
 public:
  explicit OperatorPanel(QWidget* parent = nullptr);

  // Shows `spec` as the primary operator without emitting signals (used when a session is opened).
  void setSpec(const OperatorSpec& spec);
  // Shows the session's operators: the first is primary; a second turns compare mode on (none: off).
  // Emits nothing.
  void setOperators(const std::vector<OperatorSpec>& operators);
  void setPrecision(Precision precision);
  void setDevice(DeviceChoice device);  // emits nothing
  DeviceChoice device() const;
  const OperatorSpec& spec() const;
  // The operators the session should run: the primary, then the compared one while compare is on.
  std::vector<OperatorSpec> operators() const;
  bool compareEnabled() const;
  void setCompareEnabled(bool on);  // emits operatorsChanged when it changes the state
  OperatorForm* primaryForm() const { return primary_; }
  OperatorForm* compareForm() const { return compare_; }

 signals:
  void specChanged(const tl::OperatorSpec& spec);  // the primary operator was edited
  void operatorsChanged();                         // any edit to the operator list (primary, compare, toggle)
  void precisionChanged(tl::Precision precision);
  void deviceChanged(tl::DeviceChoice device);

 private:
  OperatorForm* primary_ = nullptr;
  OperatorForm* compare_ = nullptr;
  QCheckBox* compareToggle_ = nullptr;
  QComboBox* precision_ = nullptr;
  QComboBox* device_ = nullptr;
};

}  // namespace tl
