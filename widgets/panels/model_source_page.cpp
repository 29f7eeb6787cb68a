#include "widgets/panels/model_source_page.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <algorithm>

#include "widgets/panels/image_strip.h"
#include "widgets/shell/checkpoint_files.h"
#include "widgets/views/model_captions.h"

namespace tl {
namespace {

struct ScopeChoice {
  SwapScope scope;
  const char* label;
};
const ScopeChoice kScopes[] = {{SwapScope::None, "none"},
                               {SwapScope::Layer, "this layer"},
                               {SwapScope::FromLayer, "this layer and later"},
                               {SwapScope::AllLayers, "all layers"}};

QSpinBox* indexBox(QWidget* parent, const char* name, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setObjectName(name);
  box->setRange(0, ModelSourcePage::kUnknownBound);
  box->setKeyboardTracking(false);  // typing "12" asks for layer 12, not for 1 and then 12
  box->setToolTip(tip);
  return box;
}

}  // namespace

ModelSourcePage::ModelSourcePage(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(tr("checkpoint"), makeCheckpointRow());

  auto* indices = new QWidget(this);
  auto* h = new QHBoxLayout(indices);
  h->setContentsMargins(0, 0, 0, 0);
  layer_ = indexBox(indices, "modelLayer", tr("Layer whose queries and keys the operator takes (from 0)"));
  head_ = indexBox(indices, "modelHead", tr("Head whose queries and keys the operator takes (from 0)"));
  h->addWidget(layer_);
  h->addWidget(new QLabel(tr("head"), indices));
  h->addWidget(head_);
  h->addStretch(1);
  form->addRow(tr("layer"), indices);

  swap_ = new QComboBox(this);
  swap_->setObjectName("swapScope");
  for (const ScopeChoice& c : kScopes) swap_->addItem(tr(c.label), swapScopeName(c.scope));
  swap_->setToolTip(tr("Where the primary operator (Operator panel) replaces the model's own normaliser when the "
                       "model is re-run for the [CLS] maps and the prediction: nowhere, at the chosen layer only, "
                       "at it and every later layer, at every layer, or (once a session or a compiled ASAP model lists "
                       "them) at the listed layers. The plan view always shows the operator "
                       "on the chosen layer and head."));
  form->addRow(tr("swap"), swap_);
  form->addRow(tr("image"), makeImageRow());
  strip_ = new ImageStrip(this);
  form->addRow(strip_);

  connect(layer_, &QSpinBox::valueChanged, this, [this](int layer) {
    spec_.layer = layer;
    commit();
  });
  connect(head_, &QSpinBox::valueChanged, this, [this](int head) {
    spec_.head = head;
    commit();
  });
  connect(swap_, &QComboBox::currentIndexChanged, this, [this] { emit swapScopeChanged(swapScope()); });
  connect(strip_, &ImageStrip::imagePicked, this, [this](int index) {
    spec_.image = ImageSource();
    spec_.image.index = index;
    showImage();
    commit();
  });
  showRecent();
  showImage();
}

QWidget* ModelSourcePage::makeCheckpointRow() {
  auto* row = new QWidget(this);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  // Editable: type a path, or drop down the recent checkpoints.
  checkpoint_ = new QComboBox(row);
  checkpoint_->setObjectName("modelCheckpoint");
  checkpoint_->setEditable(true);
  checkpoint_->setInsertPolicy(QComboBox::NoInsert);
  checkpoint_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  checkpoint_->setMinimumContentsLength(12);
  checkpoint_->lineEdit()->setPlaceholderText(tr("folder or weights file"));
  checkpoint_->setToolTip(tr("A ViT checkpoint: a folder with config.json and model.safetensors, or a weights file "
                             "(.safetensors, .pt, .pth, .bin). The list holds the recent ones."));
  auto* open = new QToolButton(row);
  open->setObjectName("openCheckpoint");
  open->setText(tr("Open…"));
  open->setPopupMode(QToolButton::MenuButtonPopup);
  open->setToolTip(tr("Open a weights file or a checkpoint folder's config.json (the arrow: pick a folder)"));
  auto* menu = new QMenu(open);
  menu->addAction(tr("Weights file or config.json…"), this, &ModelSourcePage::openCheckpointFile);
  menu->addAction(tr("Checkpoint folder…"), this, &ModelSourcePage::openCheckpointFolder);
  open->setMenu(menu);
  h->addWidget(checkpoint_, 1);
  h->addWidget(open);

  connect(open, &QToolButton::clicked, this, &ModelSourcePage::openCheckpointFile);
  connect(checkpoint_, &QComboBox::activated, this, [this](int index) { useCheckpoint(checkpoint_->itemText(index)); });
  connect(checkpoint_->lineEdit(), &QLineEdit::editingFinished, this,
          [this] { useCheckpoint(checkpoint_->currentText().trimmed()); });
  return row;
}

QWidget* ModelSourcePage::makeImageRow() {
  auto* row = new QWidget(this);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  image_ = new QLabel(row);
  image_->setObjectName("modelImage");
  image_->setWordWrap(true);
  auto* open = new QPushButton(tr("Open image…"), row);
  open->setObjectName("openImage");
  open->setToolTip(tr("Run the model on a PNG or JPEG file instead (converted to the model's channels and size)"));
  h->addWidget(image_, 1);
  h->addWidget(open);
  connect(open, &QPushButton::clicked, this, &ModelSourcePage::openImageFile);
  return row;
}

void ModelSourcePage::setSpec(const ModelSourceSpec& spec) {
  if (spec.checkpoint != spec_.checkpoint) forgetModelBounds();
  spec_ = spec;
  {
    const QSignalBlocker blockLayer(layer_), blockHead(head_);
    layer_->setValue(spec.layer);
    head_->setValue(spec.head);
  }
  checkpoint_->setEditText(QString::fromStdString(spec.checkpoint));
  showImage();
}

void ModelSourcePage::setSwapScope(SwapScope scope, const std::vector<int>& listed) {
  const QSignalBlocker block(swap_);
  const QString listedName = swapScopeName(SwapScope::Listed);
  if (scope == SwapScope::Listed) {
    const QString label = tr("layers %1").arg(layerList(listed));
    const int at = swap_->findData(listedName);
    if (at < 0)
      swap_->addItem(label, listedName);
    else
      swap_->setItemText(at, label);
  }
  swap_->setCurrentIndex(swap_->findData(swapScopeName(scope)));
}

SwapScope ModelSourcePage::swapScope() const { return parseSwapScope(swap_->currentData().toString().toStdString()); }

void ModelSourcePage::showModel(const ModelRun& run) {
  if (run.checkpoint != spec_.checkpoint) return;  // a late result of a checkpoint the user has left
  {
    const QSignalBlocker blockLayer(layer_), blockHead(head_);
    layer_->setMaximum(std::max(run.config.numLayers - 1, 0));
    head_->setMaximum(std::max(run.config.numHeads - 1, 0));
  }
  const QString depth = tr("this checkpoint has layers 0–%1 and heads 0–%2")
                            .arg(run.config.numLayers - 1).arg(run.config.numHeads - 1);
  layer_->setToolTip(tr("Layer whose queries and keys the operator takes; %1").arg(depth));
  head_->setToolTip(tr("Head whose queries and keys the operator takes; %1").arg(depth));
  image_->setText(QString::fromStdString(run.image.description));
  // Once per checkpoint, not on every slider move: remembering writes the settings file.
  if (run.checkpoint != remembered_) {
    remembered_ = run.checkpoint;
    rememberCheckpoint(QString::fromStdString(run.checkpoint));
    showRecent();
  }
}

void ModelSourcePage::openCheckpointFile() {
  const QString path = chooseCheckpointFile(this, QString::fromStdString(spec_.checkpoint));
  if (!path.isEmpty()) useCheckpoint(path);
}

void ModelSourcePage::openCheckpointFolder() {
  const QString path = chooseCheckpointFolder(this, QString::fromStdString(spec_.checkpoint));
  if (!path.isEmpty()) useCheckpoint(path);
}

void ModelSourcePage::openImageFile() {
  const QString start = spec_.image.isFile() ? QFileInfo(QString::fromStdString(spec_.image.file)).path() : QString();
  const QString path = chooseImageFile(this, start);
  if (!path.isEmpty()) useImageFile(path);
}

void ModelSourcePage::useCheckpoint(const QString& path) {
  const QString checkpoint = checkpointPathOf(path);
  checkpoint_->setEditText(checkpoint);
  if (checkpoint.isEmpty() || checkpoint.toStdString() == spec_.checkpoint) return;
  spec_.checkpoint = checkpoint.toStdString();
  forgetModelBounds();
  commit();
}

// Another checkpoint may be deeper or wider: the pickers open up until its run tells (showModel).
void ModelSourcePage::forgetModelBounds() {
  const QSignalBlocker blockLayer(layer_), blockHead(head_);
  layer_->setMaximum(kUnknownBound);
  head_->setMaximum(kUnknownBound);
}

void ModelSourcePage::useImageFile(const QString& path) {
  spec_.image = ImageSource();
  spec_.image.file = path.toStdString();
  showImage();
  commit();
}

// Until a checkpoint is named there is nothing to run (like the files page without Q and K).
void ModelSourcePage::commit() {
  if (complete()) emit specChanged(spec_);
}

void ModelSourcePage::showRecent() {
  const QSignalBlocker block(checkpoint_);
  const QString current = checkpoint_->currentText();
  checkpoint_->clear();
  checkpoint_->addItems(recentCheckpoints());
  checkpoint_->setEditText(current);
}

// The image as the session names it until the model has run and described it (showModel).
void ModelSourcePage::showImage() {
  const ImageSource& image = spec_.image;
  image_->setText(image.isFile() ? QFileInfo(QString::fromStdString(image.file)).fileName()
                                 : QString::fromStdString(image.toString()));
  image_->setToolTip(QString::fromStdString(image.toString()));
  strip_->setSelected(!image.isFile() && image.part == FashionMnistPart::Test ? image.index : -1);
}

}  // namespace tl
