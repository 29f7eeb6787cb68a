#pragma once
// Thumbnails of the Fashion-MNIST test images, a page of kPerPage at a time, each with its class: ◀ ▶ turn
// pages, the index box and a click pick an image. The split is read from disk the first time the strip is
// shown (a synthetic session never pays for it); without the dataset the strip says how to install it.
#include <QWidget>
#include <array>
#include <memory>

class QLabel;
class QSpinBox;
class QToolButton;

namespace tl {

struct FashionMnistSplit;

class ImageStrip : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kPerPage = 16;
  static constexpr int kColumns = 4;

  explicit ImageStrip(QWidget* parent = nullptr);

  // Highlights test image `index` and turns to its page, without emitting imagePicked; -1: none.
  void setSelected(int index);
  int selected() const { return selected_; }
  int firstShown() const { return first_; }
  int imageCount() const;  // 0 before the strip is first shown, or without the dataset
  QToolButton* thumbnail(int slot) const { return thumbs_[size_t(slot)]; }

 signals:
  void imagePicked(int index);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  bool ensureLoaded();  // false when the split cannot be read (the strip then says why)
  void showPage(int first);  // the page holding image `first`
  void fillPage();
  void pick(int index);

  std::array<QToolButton*, kPerPage> thumbs_{};
  QToolButton* previous_ = nullptr;
  QToolButton* next_ = nullptr;
  QSpinBox* index_ = nullptr;
  QLabel* range_ = nullptr;
  QLabel* problem_ = nullptr;
  QWidget* grid_ = nullptr;
  std::shared_ptr<const FashionMnistSplit> split_;
  bool triedLoading_ = false;
  int first_ = 0;
  int selected_ = -1;
};

}  // namespace tl
