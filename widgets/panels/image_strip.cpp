#include "widgets/panels/image_strip.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "data/fashion_mnist.h"

namespace tl {
namespace {

constexpr int kThumbnailPixels = 48;  // 28 × 28 grown to a size a class can be told at

QIcon thumbnailIcon(const FashionMnistSplit& split, int index) {
  const int rows = FashionMnistSplit::kRows, cols = FashionMnistSplit::kCols;
  const uint8_t* pixels = split.images.data() + size_t(index) * size_t(rows * cols);
  const QImage image(pixels, cols, rows, cols, QImage::Format_Grayscale8);
  // Nearest-neighbour: the thumbnail shows the pixels the model gets, not a smoothed version.
  return QIcon(QPixmap::fromImage(image.scaled(kThumbnailPixels, kThumbnailPixels, Qt::IgnoreAspectRatio,
                                               Qt::FastTransformation)));
}

}  // namespace

ImageStrip::ImageStrip(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* nav = new QHBoxLayout;
  previous_ = new QToolButton(this);
  previous_->setObjectName("stripPrevious");
  previous_->setText("◀");
  previous_->setToolTip(tr("Previous %1 images").arg(kPerPage));
  next_ = new QToolButton(this);
  next_->setObjectName("stripNext");
  next_->setText("▶");
  next_->setToolTip(tr("Next %1 images").arg(kPerPage));
  index_ = new QSpinBox(this);
  index_->setObjectName("stripIndex");
  index_->setPrefix("#");
  index_->setKeyboardTracking(false);
  index_->setToolTip(tr("Index of the test image the model runs on"));
  range_ = new QLabel(this);
  range_->setObjectName("stripRange");
  nav->addWidget(previous_);
  nav->addWidget(index_);
  nav->addWidget(next_);
  nav->addWidget(range_, 1);
  layout->addLayout(nav);

  grid_ = new QWidget(this);
  auto* thumbs = new QGridLayout(grid_);
  thumbs->setContentsMargins(0, 0, 0, 0);
  thumbs->setSpacing(2);
  QFont small = font();
  small.setPointSizeF(7.5);
  for (int slot = 0; slot < kPerPage; ++slot) {
    auto* button = new QToolButton(grid_);
    button->setObjectName(QString("thumbnail:%1").arg(slot));
    button->setToolButtonStyle(Qt::ToolButtonTextUnderIcon);
    button->setIconSize(QSize(kThumbnailPixels, kThumbnailPixels));
    button->setCheckable(true);
    button->setAutoRaise(true);
    button->setFont(small);
    button->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    thumbs->addWidget(button, slot / kColumns, slot % kColumns);
    thumbs_[size_t(slot)] = button;
    connect(button, &QToolButton::clicked, this, [this, slot] { pick(first_ + slot); });
  }
  layout->addWidget(grid_);
  problem_ = new QLabel(this);
  problem_->setObjectName("stripProblem");
  problem_->setWordWrap(true);
  problem_->setStyleSheet("color: palette(mid);");
  problem_->hide();
  layout->addWidget(problem_);

  connect(previous_, &QToolButton::clicked, this, [this] { showPage(first_ - kPerPage); });
  connect(next_, &QToolButton::clicked, this, [this] { showPage(first_ + kPerPage); });
  connect(index_, &QSpinBox::valueChanged, this, [this](int index) {
    if (index != selected_) pick(index);
  });
}

// One copy of the split per process however many strips there are; read on the GUI thread (a few tens
// of milliseconds, once).
bool ImageStrip::ensureLoaded() {
  if (split_ || triedLoading_) return bool(split_);
  triedLoading_ = true;
  static std::weak_ptr<const FashionMnistSplit> shared;
  split_ = shared.lock();
  try {
    if (!split_) shared = split_ = std::make_shared<const FashionMnistSplit>(loadFashionMnist(FashionMnistPart::Test));
  } catch (const std::exception& e) {
    grid_->hide();
    problem_->setText(tr("No thumbnails: %1").arg(QString::fromUtf8(e.what())));
    problem_->show();
    return false;
  }
  const QSignalBlocker block(index_);
  index_->setRange(0, split_->count - 1);
  showPage(selected_ >= 0 ? selected_ : first_);
  return true;
}

void ImageStrip::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  ensureLoaded();
}

int ImageStrip::imageCount() const { return split_ ? split_->count : 0; }

void ImageStrip::setSelected(int index) {
  selected_ = index;
  if (index >= 0) {
    const QSignalBlocker block(index_);
    index_->setValue(index);
  }
  showPage(index >= 0 ? index : first_);
}

void ImageStrip::showPage(int first) {
  const int count = imageCount();
  first_ = count > 0 ? std::clamp(first, 0, count - 1) / kPerPage * kPerPage : 0;
  fillPage();
}

void ImageStrip::pick(int index) {
  if (index < 0 || index >= imageCount()) return;
  setSelected(index);
  emit imagePicked(index);
}

void ImageStrip::fillPage() {
  const int count = imageCount();
  const auto& names = fashionMnistClassNames();
  for (int slot = 0; slot < kPerPage; ++slot) {
    QToolButton* button = thumbs_[size_t(slot)];
    const int index = first_ + slot;
    button->setVisible(index < count);
    if (index >= count) continue;
    const QString name = QString::fromStdString(names[split_->labels[size_t(index)]]);
    button->setIcon(thumbnailIcon(*split_, index));
    button->setText(name);
    button->setToolTip(tr("fashion-mnist test #%1 (%2)").arg(index).arg(name));
    button->setChecked(index == selected_);
  }
  previous_->setEnabled(first_ > 0);
  next_->setEnabled(first_ + kPerPage < count);
  range_->setText(count > 0 ? tr("%1–%2 of %3").arg(first_).arg(std::min(first_ + kPerPage, count) - 1).arg(count)
                            : QString());
}

}  // namespace tl
