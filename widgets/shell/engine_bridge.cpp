#include "widgets/shell/engine_bridge.h"

namespace tl {

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const tl::SessionResult>>();
  // Emitting from the worker thread makes Qt queue the call to this object's (the GUI) thread.
  engine_ = std::make_unique<Engine>(
      [this](std::shared_ptr<const SessionResult> result) { emit resultReady(std::move(result)); },
      [this](uint64_t id, const std::string& message) { emit failed(id, QString::fromStdString(message)); },
      [this](uint64_t id, double fraction, const std::string& stage) {
        emit progress(id, fraction, QString::fromStdString(stage));
      });
}

// The worker is joined before the QObject part goes away, so no callback can outlive the signals.
EngineBridge::~EngineBridge() { engine_.reset(); }

uint64_t EngineBridge::submit(const Session& session) { return engine_->submit(session); }

void EngineBridge::cancelAll() { engine_->cancelAll(); }

}  // namespace tl
