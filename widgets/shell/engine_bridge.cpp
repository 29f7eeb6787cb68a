#include "widgets/shell/engine_bridge.h"

namespace tl {

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const tl::SessionResult>>();
  // Emitting from the worker thread makes Qt queue the call to this object's (the GUI) thread.
  engine_ = std::make_unique<Engine>(
      [this](std::shared_ptr<const SessionResult> result) { emit resultReady(std::move(result)); },
      [this](uint64_t id, const std::string& message) { emit failed(id, QString::fromStdString(message)); },
      [this](uint64_t id, double fraction, const std::string& stage) {
        if (throttle_.due(id, std::chrono::steady_clock::now())) emit progress(id, fraction, QString::fromStdString(stage));
      });
}

bool ProgressThrottle::due(uint64_t requestId, std::chrono::steady_clock::time_point now) {
  if (requestId != requestId_) {  // a new request starts its clock: nothing in its first interval
    requestId_ = requestId;
    last_ = now;
    return false;
  }
  if (now - last_ < kInterval) return false;
  last_ = now;
  return true;
}

// The worker is joined before the QObject part goes away, so no callback can outlive the signals.
EngineBridge::~EngineBridge() { engine_.reset(); }

uint64_t EngineBridge::submit(const Session& session, const RunOptions& options) {
  return engine_->submit(session, options);
}

void EngineBridge::cancelAll() { engine_->cancelAll(); }

}  // namespace tl
