#include "widgets/panels/source_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "data/synthetic.h"
#include "widgets/panels/model_source_page.h"
#include "widgets/panels/param_form.h"

namespace tl {
namespace {

const char* const kFilesItem = "files";  // combo data of the "NumPy files" entry
const char* const kModelItem = "model";  // combo data of the "Model checkpoint" entry
enum Page { kGeneratorPage, kFilesPage, kModelPage };
const char* const kRoleNames[] = {"Q", "K", "V", "mask"};
const char* const kRoleHints[] = {
    "queries, n_q × d (required)", "keys, n_k × d (required)", "values, n_k × d_v (optional)",
    "key mask, length n, nonzero = valid token (optional)"};

}  // namespace

SourcePanel::SourcePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QFormLayout;
  kind_ = new QComboBox(this);
  kind_->setObjectName("sourceKind");
  for (const GeneratorInfo& g : syntheticGenerators()) {
    kind_->addItem(QString::fromStdString(g.title), QString::fromStdString(g.name));
    kind_->setItemData(kind_->count() - 1, QString::fromStdString(g.description), Qt::ToolTipRole);
  }
  kind_->addItem(tr("NumPy files (.npy)"), QString(kFilesItem));
  kind_->addItem(tr("Model checkpoint (ViT)"), QString(kModelItem));
  kind_->setItemData(kind_->count() - 1, tr("Q, K and V of one layer and head of a vision transformer on an image"),
                     Qt::ToolTipRole);
  top->addRow(tr("source"), kind_);
  layout->addLayout(top);

  description_ = new QLabel(this);
  description_->setWordWrap(true);
  description_->setStyleSheet("color: palette(mid);");
  layout->addWidget(description_);

  pages_ = new QStackedWidget(this);
  auto* generatorPage = new QWidget(pages_);
  generatorHost_ = new QVBoxLayout(generatorPage);
  generatorHost_->setContentsMargins(0, 0, 0, 0);
  pages_->addWidget(generatorPage);
  pages_->addWidget(makeFilesPage());
  modelPage_ = new ModelSourcePage(pages_);
  pages_->addWidget(modelPage_);
  layout->addWidget(pages_);
  layout->addStretch(1);

  connect(kind_, &QComboBox::currentIndexChanged, this, &SourcePanel::onKindPicked);
  connect(modelPage_, &ModelSourcePage::specChanged, this, &SourcePanel::commitModel);
  connect(modelPage_, &ModelSourcePage::swapScopeChanged, this, &SourcePanel::swapScopeChanged);
  SourceSpec initial;
  initial.params = syntheticGenerator(initial.generator).schema.resolve({}, initial.generator);
  setSource(initial);
}

QWidget* SourcePanel::makeFilesPage() {
  auto* page = new QWidget(pages_);
  auto* form = new QFormLayout(page);
  form->setContentsMargins(0, 0, 0, 0);
  for (int role = 0; role < kRoles; ++role) {
    auto* row = new QWidget(page);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    files_[role] = new QLineEdit(row);
    files_[role]->setObjectName(QString("file:") + kRoleNames[role]);
    files_[role]->setPlaceholderText(kRoleHints[role]);
    files_[role]->setToolTip(kRoleHints[role]);
    auto* button = new QToolButton(row);
    button->setText("…");
    h->addWidget(files_[role], 1);
    h->addWidget(button);
    form->addRow(kRoleNames[role], row);
    connect(files_[role], &QLineEdit::editingFinished, this, &SourcePanel::commitFiles);
    connect(button, &QToolButton::clicked, this, [this, role] {
      if (browse(FileRole(role))) commitFiles();
    });
  }
  auto* open = new QPushButton(tr("Open .npy…"), page);
  open->setToolTip(tr("Choose the query file, then the key file"));
  connect(open, &QPushButton::clicked, this, &SourcePanel::openNpy);
  form->addRow(open);
  return page;
}

bool SourcePanel::browse(FileRole role) {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open %1 — %2").arg(kRoleNames[role], kRoleHints[role]), files_[role]->text(),
      tr("NumPy arrays (*.npy);;All files (*)"));
  if (path.isEmpty()) return false;
  files_[role]->setText(path);
  return true;
}

void SourcePanel::openNpy() {
  kind_->setCurrentIndex(kind_->findData(QString(kFilesItem)));
  if (browse(kQ) && browse(kK)) commitFiles();
}

// Files are read by the Engine; until both Q and K are named there is nothing to compute.
void SourcePanel::commitFiles() {
  if (files_[kQ]->text().isEmpty() || files_[kK]->text().isEmpty()) return;
  SourceSpec spec;
  spec.kind = SourceSpec::Kind::Files;
  spec.q = files_[kQ]->text().toStdString();
  spec.k = files_[kK]->text().toStdString();
  spec.v = files_[kV]->text().toStdString();
  spec.mask = files_[kMask]->text().toStdString();
  spec_ = spec;
  emit sourceChanged(spec_);
}

void SourcePanel::showGenerator(const GeneratorInfo& generator, const ParamSet& values) {
  delete form_;
  form_ = new ParamForm(generator.schema, values, this);
  generatorHost_->addWidget(form_);
  description_->setText(QString::fromStdString(generator.description));
  connect(form_, &ParamForm::valuesChanged, this, [this] {
    spec_.params = form_->values();
    emit sourceChanged(spec_);
  });
}

void SourcePanel::setSource(const SourceSpec& spec) {
  const bool sameGenerator = form_ && spec.kind == SourceSpec::Kind::Synthetic &&
                             spec_.kind == SourceSpec::Kind::Synthetic && spec.generator == spec_.generator;
  spec_ = spec;
  const QSignalBlocker block(kind_);
  if (spec.kind == SourceSpec::Kind::Model) {
    modelPage_->setSpec(spec.model);
    showModelPage();
    return;
  }
  if (spec.kind == SourceSpec::Kind::Files) {
    kind_->setCurrentIndex(kind_->findData(QString(kFilesItem)));
    const std::string* paths[kRoles] = {&spec.q, &spec.k, &spec.v, &spec.mask};
    for (int role = 0; role < kRoles; ++role) files_[role]->setText(QString::fromStdString(*paths[role]));
    description_->setText(tr("Queries and keys from NumPy files"));
    pages_->setCurrentIndex(kFilesPage);
    return;
  }
  kind_->setCurrentIndex(kind_->findData(QString::fromStdString(spec.generator)));
  if (sameGenerator) form_->setValues(spec.params);
  else showGenerator(syntheticGenerator(spec.generator), spec.params);
  pages_->setCurrentIndex(kGeneratorPage);
}

void SourcePanel::onKindPicked(int index) {
  const QString name = kind_->itemData(index).toString();
  if (name == kModelItem) {
    showModelPage();
    if (modelPage_->complete()) commitModel();
    return;
  }
  if (name == kFilesItem) {
    pages_->setCurrentIndex(kFilesPage);
    description_->setText(tr("Queries and keys from NumPy files"));
    commitFiles();
    return;
  }
  SourceSpec spec;
  spec.generator = name.toStdString();
  const GeneratorInfo& generator = syntheticGenerator(spec.generator);
  spec.params = generator.schema.resolve({}, spec.generator);
  spec_ = spec;
  showGenerator(generator, spec.params);
  pages_->setCurrentIndex(kGeneratorPage);
  emit sourceChanged(spec_);
}

void SourcePanel::showModelPage() {
  const QSignalBlocker block(kind_);
  kind_->setCurrentIndex(kind_->findData(QString(kModelItem)));
  description_->setText(tr("Q, K and V of one layer and head of a ViT checkpoint on an image. The [CLS] maps and "
                           "the prediction show the model with the primary operator swapped in."));
  pages_->setCurrentIndex(kModelPage);
}

void SourcePanel::commitModel() {
  spec_ = SourceSpec();
  spec_.kind = SourceSpec::Kind::Model;
  spec_.model = modelPage_->spec();
  emit sourceChanged(spec_);
}

// A page that names a checkpoint becomes the source even when the edit left it as it was (the same
// checkpoint dropped again after a synthetic source), so the panel never shows a source it does not run.
void SourcePanel::editModelPage(const std::function<void()>& edit) {
  showModelPage();
  edit();
  if (spec_.kind != SourceSpec::Kind::Model && modelPage_->complete()) commitModel();
}

void SourcePanel::openCheckpoint() {
  editModelPage([this] { modelPage_->openCheckpointFile(); });
}

void SourcePanel::useCheckpoint(const QString& path) {
  editModelPage([this, &path] { modelPage_->useCheckpoint(path); });
}

void SourcePanel::useImageFile(const QString& path) {
  editModelPage([this, &path] { modelPage_->useImageFile(path); });
}

void SourcePanel::setSwapScope(SwapScope scope, const std::vector<int>& listed) {
  modelPage_->setSwapScope(scope, listed);
}

void SourcePanel::showModel(const ModelRun* run) {
  if (run) modelPage_->showModel(*run);
}

}  // namespace tl
