#include "widgets/shell/asap_compile_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <filesystem>

namespace tl {
namespace {

constexpr int kLargestImageIndex = 59999;  // the training split's last image; the compiler checks the split

QString calibrationText(const QComboBox* split, const QSpinBox* first, const QSpinBox* last) {
  return QStringLiteral("fashion-mnist:%1:%2-%3").arg(split->currentData().toString()).arg(first->value()).arg(last->value());
}

}  // namespace

std::string AsapCompileDialog::defaultOutput(const std::string& checkpoint) {
  std::filesystem::path path(checkpoint);
  if (!path.has_filename()) path = path.parent_path();  // "ckpt/" names the folder ckpt
  if (!std::filesystem::is_directory(path)) path.replace_extension();
  return path.string() + "-asap";
}

AsapCompileDialog::AsapCompileDialog(const std::string& checkpoint, int numLayers, QWidget* parent)
    : QDialog(parent), checkpoint_(checkpoint) {
  setWindowTitle(tr("Compile this checkpoint into ASAP"));
  setObjectName("asapCompileDialog");
  auto* form = new QFormLayout;

  split_ = new QComboBox(this);
  split_->setObjectName("asapCalibSplit");
  split_->addItem(tr("training split"), "train");
  split_->addItem(tr("test split"), "test");
  first_ = new QSpinBox(this);
  first_->setObjectName("asapCalibFirst");
  last_ = new QSpinBox(this);
  last_->setObjectName("asapCalibLast");
  for (QSpinBox* s : {first_, last_}) s->setRange(0, kLargestImageIndex);
  auto* calibration = new QHBoxLayout;
  calibration->addWidget(split_);
  calibration->addWidget(new QLabel(tr("images"), this));
  calibration->addWidget(first_);
  calibration->addWidget(new QLabel(tr("to"), this));
  calibration->addWidget(last_);
  form->addRow(tr("Calibration (Fashion-MNIST, labels unused)"), calibration);

  slices_ = new QSpinBox(this);
  slices_->setObjectName("asapCompileSlices");
  slices_->setRange(1, 1024);
  slices_->setToolTip(tr("Slices L per layer: one feature per slice, the features the fit combines"));
  form->addRow(tr("Slices L"), slices_);

  features_ = new QComboBox(this);
  features_->setObjectName("asapCompileFeatures");
  features_->addItem(tr("sliced potentials (ASAP)"), "potentials");
  features_->addItem(tr("raw centred projections"), "raw");
  features_->addItem(tr("rank displacement T(x) − x"), "rank-displacement");
  features_->addItem(tr("predict both duals, no c-transform (LS only)"), "predict-both");
  features_->setToolTip(tr("What the columns of Φ are (docs/operators/asap.md#feature-families). The alternatives "
                           "are the paper's design ablation; predict-both also regresses the key dual and forms "
                           "P(f̂, ĝ) with no closure, so its marginals are not exact."));
  form->addRow(tr("Features"), features_);

  fit_ = new QComboBox(this);
  fit_->setObjectName("asapCompileFit");
  fit_->addItem(tr("least squares (LS)"), "ls");
  fit_->addItem(tr("KL (Newton from the LS solution)"), "kl");
  form->addRow(tr("Fit"), fit_);

  lambdaB_ = new QLineEdit(this);
  lambdaB_->setObjectName("asapCompileLambda");
  auto* positive = new QDoubleValidator(0, 1e6, 12, lambdaB_);
  positive->setNotation(QDoubleValidator::ScientificNotation);
  lambdaB_->setValidator(positive);
  lambdaB_->setToolTip(tr("Ridge λ_B on the risk normalised over the pooled rows (λ = rows · λ_B)"));
  form->addRow(tr("λ_B"), lambdaB_);

  auto* layers = new QHBoxLayout;
  for (int l = 0; l < numLayers; ++l) {
    auto* box = new QCheckBox(QString::number(l), this);
    box->setObjectName(QStringLiteral("asapCompileLayer%1").arg(l));
    layers_.push_back(box);
    layers->addWidget(box);
  }
  layers->addStretch(1);
  form->addRow(tr("Layers"), layers);

  calibrationMode_ = new QComboBox(this);
  calibrationMode_->setObjectName("asapCompileMode");
  calibrationMode_->addItem(tr("parallel: every layer behind the teacher"), "parallel");
  calibrationMode_->addItem(tr("sequential: each layer behind the compiled ones"), "sequential");
  calibrationMode_->addItem(tr("shared: one β for every layer"), "shared");
  form->addRow(tr("Calibration order"), calibrationMode_);

  out_ = new QLineEdit(this);
  out_->setObjectName("asapCompileOut");
  out_->setMinimumWidth(360);
  auto* browse = new QPushButton(tr("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder of the compiled model"), out_->text());
    if (!dir.isEmpty()) out_->setText(dir);
  });
  auto* out = new QHBoxLayout;
  out->addWidget(out_, 1);
  out->addWidget(browse);
  form->addRow(tr("Output folder"), out);

  swapIn_ = new QCheckBox(tr("Swap the compiled layers into the model when done"), this);
  swapIn_->setObjectName("asapCompileSwapIn");
  swapIn_->setChecked(true);

  problem_ = new QLabel(this);
  problem_->setObjectName("asapCompileProblem");
  problem_->setStyleSheet("QLabel { color: #a01010; }");
  problem_->hide();

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Compile"));
  connect(buttons, &QDialogButtonBox::accepted, this, &AsapCompileDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("Fits one β per layer (on the chosen features) to the teacher's Sinkhorn duals on the "
                                   "calibration images (as <tt>tlens asap-compile</tt>).<br>Checkpoint: <tt>%1</tt>")
                                   .arg(QString::fromStdString(checkpoint).toHtmlEscaped()),
                               this));
  layout->addLayout(form);
  layout->addWidget(swapIn_);
  layout->addWidget(problem_);
  layout->addWidget(buttons);
  setOptions({});
}

void AsapCompileDialog::setOptions(const AsapCompileOptions& o) {
  const QString calibration = QString::fromStdString(o.calibration);  // fashion-mnist:SPLIT:FIRST-LAST
  const QStringList parts = calibration.split(':');
  if (parts.size() == 3) {
    split_->setCurrentIndex(std::max(0, split_->findData(parts[1])));
    const QStringList range = parts[2].split('-');
    if (range.size() == 2) {
      first_->setValue(range[0].toInt());
      last_->setValue(range[1].toInt());
    }
  }
  slices_->setValue(o.L);
  features_->setCurrentIndex(features_->findData(QString::fromStdString(asapFeaturesName(o.features))));
  fit_->setCurrentIndex(fit_->findData(QString::fromStdString(fitKindName(o.fit))));
  lambdaB_->setText(QString::number(o.lambdaB, 'g', 6));
  for (size_t l = 0; l < layers_.size(); ++l)
    layers_[l]->setChecked(o.layers.empty() || std::find(o.layers.begin(), o.layers.end(), int(l)) != o.layers.end());
  calibrationMode_->setCurrentIndex(o.shared ? 2 : o.sequential ? 1 : 0);
  out_->setText(QString::fromStdString(o.out.empty() ? defaultOutput(checkpoint_) : o.out));
}

AsapCompileOptions AsapCompileDialog::options() const {
  AsapCompileOptions o;
  o.calibration = calibrationText(split_, first_, last_).toStdString();
  o.L = slices_->value();
  o.features = parseAsapFeatures(features_->currentData().toString().toStdString());
  o.fit = parseFitKind(fit_->currentData().toString().toStdString());
  o.lambdaB = lambdaB_->text().toDouble();
  bool all = true;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l]->isChecked()) o.layers.push_back(int(l));
    all = all && layers_[l]->isChecked();
  }
  if (all) o.layers.clear();  // every layer, as --layers all
  const QString mode = calibrationMode_->currentData().toString();
  o.sequential = mode == "sequential";
  o.shared = mode == "shared";
  o.out = out_->text().trimmed().toStdString();
  return o;
}

bool AsapCompileDialog::swapInWhenDone() const { return swapIn_->isChecked(); }

void AsapCompileDialog::accept() {
  QString problem;
  if (std::none_of(layers_.begin(), layers_.end(), [](const QCheckBox* b) { return b->isChecked(); }))
    problem = tr("Pick at least one layer to compile.");
  else if (out_->text().trimmed().isEmpty())
    problem = tr("Name the folder the compiled model goes to.");
  else if (first_->value() > last_->value())
    problem = tr("The first calibration image comes after the last.");
  else if (!(lambdaB_->text().toDouble() >= 0) || lambdaB_->text().isEmpty())
    problem = tr("λ_B must be a number ≥ 0, e.g. 1e-4.");
  else if (features_->currentData() == "predict-both" && fit_->currentData() == "kl")
    problem = tr("KL is not defined for predict-both (it never forms the key-closed plan): use least squares.");
  problem_->setText(problem);
  problem_->setVisible(!problem.isEmpty());
  if (problem.isEmpty()) QDialog::accept();
}

}  // namespace tl
