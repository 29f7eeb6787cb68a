#include "widgets/views/view.h"

#include <QPoint>
#include <QRect>
#include <QTimer>
#include <utility>

namespace tl {

void View::present(std::shared_ptr<const SessionResult> result) {
  if (!onScreen()) {
    pending_ = std::move(result);
    return;
  }
  pending_.reset();
  setResult(std::move(result));
}

void View::drawPending() {
  if (pending_) setResult(std::exchange(pending_, nullptr));
}

bool View::onScreen() const {
  if (!isVisible()) return false;
  // Where the layout put the view, not visibleRegion(): that leaves out opaque children, and a family view's
  // scroll area covers all of it. A tab behind another sits outside the window (view.h).
  const QWidget* top = window();
  return QRect(mapTo(top, QPoint(0, 0)), size()).intersects(top->rect());
}

void View::drawPendingWhenOnScreen() {
  if (!pending_) return;
  // Queued: a dock's tab is moved into place after its visibility signal, the window after its show event.
  QTimer::singleShot(0, this, [this] {
    if (onScreen()) drawPending();
  });
}

void View::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  drawPendingWhenOnScreen();
}

const OperatorRun* primaryRun(const SessionResult* result) {
  return (result && !result->runs.empty()) ? &result->runs.front() : nullptr;
}

}  // namespace tl
