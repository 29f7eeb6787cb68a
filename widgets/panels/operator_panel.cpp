#include "widgets/panels/operator_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "cuda/backend.h"
#include "widgets/panels/operator_form.h"

namespace tl {

OperatorPanel::OperatorPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  primary_ = new OperatorForm("operatorFamily", this);
  layout->addWidget(primary_);

  auto* top = new QFormLayout;
  precision_ = new QComboBox(this);
  precision_->setObjectName("precision");
  for (Precision p : {Precision::F64, Precision::F32}) precision_->addItem(precisionName(p), int(p));
  precision_->setToolTip(tr("Floating-point precision the operators run in (results are shown in double)"));
  top->addRow(tr("precision"), precision_);
  device_ = new QComboBox(this);
  device_->setObjectName("device");
  for (DeviceChoice d : {DeviceChoice::Cpu, DeviceChoice::Cuda, DeviceChoice::Auto})
    device_->addItem(deviceChoiceName(d), int(d));
  const BackendInfo& backend = backendInfo();
  if (backend.cudaDevices == 0) {
    // cuda stays selectable only to open sessions saved with it; running there fails with the reason.
    auto* items = qobject_cast<QStandardItemModel*>(device_->model());
    items->item(1)->setEnabled(false);
    items->item(1)->setToolTip(tr("No usable GPU: %1").arg(QString::fromStdString(backend.cudaStatus)));
  }
  device_->setToolTip(tr("Where the operators run: cpu (the reference), cuda (the GPU, float32; families without "
                         "CUDA kernels run on the CPU and the status bar says so) or auto (cuda when a usable "
                         "GPU exists). This machine: %1").arg(QString::fromStdString(backendLabel())));
  top->addRow(tr("device"), device_);
  layout->addLayout(top);

  compareToggle_ = new QCheckBox(tr("compare with a second operator"), this);
  compareToggle_->setObjectName("compareToggle");
  compareToggle_->setToolTip(tr("Run a second operator on the same input; the Compare view shows both plans, "
                                "their difference and a table of diagnostics"));
  layout->addWidget(compareToggle_);
  compare_ = new OperatorForm("compareFamily", this);
  compare_->setObjectName("compareForm");
  compare_->setVisible(false);
  layout->addWidget(compare_);
  layout->addStretch(1);

  connect(primary_, &OperatorForm::specChanged, this, [this](const OperatorSpec& spec) {
    emit specChanged(spec);
    emit operatorsChanged();
  });
  connect(compare_, &OperatorForm::specChanged, this, [this] {
    if (compareEnabled()) emit operatorsChanged();
  });
  connect(compareToggle_, &QCheckBox::toggled, this, [this](bool on) {
    compare_->setVisible(on);
    emit operatorsChanged();
  });
  connect(precision_, &QComboBox::currentIndexChanged, this,
          [this](int) { emit precisionChanged(Precision(precision_->currentData().toInt())); });
  connect(device_, &QComboBox::currentIndexChanged, this, [this](int) { emit deviceChanged(device()); });
  // The second operator starts as the one most sessions compare against: plain softmax.
  compare_->setSpec(OperatorRegistry::builtin().resolve("softmax", {}));
}

void OperatorPanel::setSpec(const OperatorSpec& spec) { primary_->setSpec(spec); }

void OperatorPanel::setOperators(const std::vector<OperatorSpec>& operators) {
  if (!operators.empty()) primary_->setSpec(operators.front());
  if (operators.size() > 1) compare_->setSpec(operators[1]);
  const QSignalBlocker block(compareToggle_);
  compareToggle_->setChecked(operators.size() > 1);
  compare_->setVisible(operators.size() > 1);
}

void OperatorPanel::setPrecision(Precision precision) {
  const QSignalBlocker block(precision_);
  precision_->setCurrentIndex(precision_->findData(int(precision)));
}

void OperatorPanel::setDevice(DeviceChoice device) {
  const QSignalBlocker block(device_);
  device_->setCurrentIndex(device_->findData(int(device)));
}

DeviceChoice OperatorPanel::device() const { return DeviceChoice(device_->currentData().toInt()); }

const OperatorSpec& OperatorPanel::spec() const { return primary_->spec(); }

std::vector<OperatorSpec> OperatorPanel::operators() const {
  std::vector<OperatorSpec> ops{primary_->spec()};
  if (compareEnabled()) ops.push_back(compare_->spec());
  return ops;
}

bool OperatorPanel::compareEnabled() const { return compareToggle_->isChecked(); }
void OperatorPanel::setCompareEnabled(bool on) { compareToggle_->setChecked(on); }

}  // namespace tl
