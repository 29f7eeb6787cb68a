#include "widgets/views/view.h"

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

bool View::onScreen() const { return isVisible() && !visibleRegion().isEmpty(); }

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
