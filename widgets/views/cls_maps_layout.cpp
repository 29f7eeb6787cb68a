#include "widgets/views/cls_maps_layout.h"

#include <algorithm>
#include <cmath>

namespace tl {
namespace {

constexpr int kGap = 14;        // between the large map, the grid and the scale
constexpr int kPanelGap = 6;    // between small maps
constexpr int kTitle = 20;      // room above each image for its title (fitImageExtent places it exactly)
constexpr int kScaleWidth = 80; // colour bar, tick labels and axis label, until the scale has measured itself

}  // namespace

ClsMapsLayout::~ClsMapsLayout() { clear(); }

void ClsMapsLayout::setLarge(QCPLayoutElement* large) {
  large_ = large;
  adoptElement(large);
}

void ClsMapsLayout::setScale(QCPLayoutElement* scale) {
  scale_ = scale;
  adoptElement(scale);
}

void ClsMapsLayout::addPanel(QCPLayoutElement* panel) {
  panels_.push_back(panel);
  adoptElement(panel);
}

void ClsMapsLayout::removePanels() {
  while (!panels_.empty()) remove(panels_.back());
}

int ClsMapsLayout::columns() const {
  return std::max(1, int(std::ceil(std::sqrt(double(panels_.size())))));
}
int ClsMapsLayout::rows() const { return std::max(1, int((panels_.size() + size_t(columns()) - 1) / size_t(columns()))); }

// Only elements that are there: QCustomPlot walks elementAt(0 .. elementCount() − 1) without null checks.
std::vector<QCPLayoutElement*> ClsMapsLayout::present() const {
  std::vector<QCPLayoutElement*> all;
  for (QCPLayoutElement* e : {large_, scale_})
    if (e) all.push_back(e);
  all.insert(all.end(), panels_.begin(), panels_.end());
  return all;
}

int ClsMapsLayout::elementCount() const { return int(present().size()); }

QCPLayoutElement* ClsMapsLayout::elementAt(int index) const {
  const std::vector<QCPLayoutElement*> all = present();
  return index >= 0 && index < int(all.size()) ? all[size_t(index)] : nullptr;
}

QCPLayoutElement* ClsMapsLayout::takeAt(int index) {
  QCPLayoutElement* element = elementAt(index);
  if (element) take(element);
  return element;
}

bool ClsMapsLayout::take(QCPLayoutElement* element) {
  if (!element) return false;
  if (element == large_) large_ = nullptr;
  else if (element == scale_) scale_ = nullptr;
  else if (auto it = std::find(panels_.begin(), panels_.end(), element); it != panels_.end()) panels_.erase(it);
  else return false;
  releaseElement(element);
  return true;
}

// With L the large image's side, the small ones' side follows from stacking `rows` of them (with titles and
// gaps) to the large map's height, so the group's width is linear in L; L is the largest that fits both
// the height and the width.
void ClsMapsLayout::updateLayout() {
  const QRect r = rect();
  const int R = rows(), C = columns();
  // The scale measures its tick labels in the margins phase, which runs before this one.
  const int scaleWidth = scale_ ? std::min(getFinalMaximumOuterSize(scale_).width(), 2 * kScaleWidth) : 0;
  auto small = [&](double L) { return (L + kTitle - (R - 1) * kPanelGap) / R - kTitle; };
  auto width = [&](double L) {
    return L + (panels_.empty() ? 0 : kGap + C * small(L) + (C - 1) * kPanelGap) + kGap + scaleWidth;
  };
  const double fixed = width(0), perUnit = width(1) - fixed;
  const double L = std::max(std::min(double(r.height() - kTitle), (r.width() - fixed) / perUnit), 1.0);
  const double S = std::max(small(L), 1.0);
  const int left = r.left() + std::max(0, int((r.width() - width(L)) / 2));
  const int top = r.top() + std::max(0, int((r.height() - L - kTitle) / 2));

  if (large_) large_->setOuterRect(QRect(left, top, int(L), int(L) + kTitle));
  const int gridLeft = left + int(L) + kGap;
  for (size_t p = 0; p < panels_.size(); ++p) {
    const int row = int(p) / C, column = int(p) % C;
    panels_[p]->setOuterRect(QRect(gridLeft + int(column * (S + kPanelGap)), top + int(row * (S + kTitle + kPanelGap)),
                                   int(S), int(S) + kTitle));
  }
  const int scaleLeft = panels_.empty() ? gridLeft : gridLeft + int(C * S + (C - 1) * kPanelGap) + kGap;
  if (scale_) scale_->setOuterRect(QRect(scaleLeft, top + kTitle, scaleWidth, int(L)));
}

}  // namespace tl
