#pragma once
// Owns the core Engine and turns its worker-thread callbacks into queued Qt signals, so every view
// update happens on the GUI thread while the transport math stays on the Engine's worker.
#include <QObject>
#include <QString>
#include <chrono>
#include <cstdint>
#include <memory>

#include "session/engine.h"

Q_DECLARE_METATYPE(std::shared_ptr<const tl::SessionResult>)

namespace tl {

// Which progress reports of the Engine reach the window: none in a request's first interval (a slider move
// that computes in less has nothing worth a bar) and then one per interval. Each report relabels and repaints
// the status bar on the GUI thread, and a Sinkhorn run reports every step: unthrottled, T = 100 at n = 512
// queued a hundred repaints ahead of its own result. Called on the Engine's worker thread only.
class ProgressThrottle {
 public:
  static constexpr std::chrono::milliseconds kInterval{100};
  bool due(uint64_t requestId, std::chrono::steady_clock::time_point now);

 private:
  uint64_t requestId_ = 0;
  std::chrono::steady_clock::time_point last_;
};

class EngineBridge : public QObject {
  Q_OBJECT
 public:
  explicit EngineBridge(QObject* parent = nullptr);
  ~EngineBridge() override;

  // Supersedes any older request; returns its id.
  uint64_t submit(const Session& session, const RunOptions& options = {});
  // Cancels the running request and drops the pending one; neither answers.
  void cancelAll();

 signals:
  void resultReady(std::shared_ptr<const tl::SessionResult> result);
  void failed(quint64 requestId, const QString& message);
  void progress(quint64 requestId, double fraction, const QString& stage);

 private:
  ProgressThrottle throttle_;
  std::unique_ptr<Engine> engine_;  // last: its worker, which uses throttle_, stops first
};

}  // namespace tl
