#pragma once
// Owns the core Engine and turns its worker-thread callbacks into queued Qt signals, so every view
// update happens on the GUI thread while the transport math stays on the Engine's worker.
#include <QObject>
#include <QString>
#include <memory>

#include "session/engine.h"

Q_DECLARE_METATYPE(std::shared_ptr<const tl::SessionResult>)

namespace tl {

class EngineBridge : public QObject {
  Q_OBJECT
 public:
  explicit EngineBridge(QObject* parent = nullptr);
  ~EngineBridge() override;

  // Supersedes any older request; returns its id.
  uint64_t submit(const Session& session);
  // Cancels the running request and drops the pending one; neither answers.
  void cancelAll();

 signals:
  void resultReady(std::shared_ptr<const tl::SessionResult> result);
  void failed(quint64 requestId, const QString& message);
  void progress(quint64 requestId, double fraction, const QString& stage);

 private:
  std::unique_ptr<Engine> engine_;
};

}  // namespace tl
