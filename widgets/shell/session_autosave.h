#pragma once
// Crash recovery for the session on screen. While the window runs, its session is written to its own file,
// <folder>/session.json, shortly after each change: atomically, off the GUI thread, only when it differs from
// what was written last. A run marker beside it (io/run_marker.h) tells the next start whether this run ended
// cleanly. A clean exit removes both, so only a run that was killed or crashed leaves a session to offer.
// The autosave never writes anywhere else: a session file the user opened or saved is not touched.
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QTimer>
#include <atomic>
#include <functional>
#include <memory>

#include "io/run_marker.h"
#include "session/session.h"

namespace tl {

class SessionAutosave : public QObject {
  Q_OBJECT
 public:
  // $XDG_DATA_HOME/TransportLens/autosave (default ~/.local/share/TransportLens/autosave): per user, and moved
  // with XDG_DATA_HOME or HOME, which is how tests keep away from the real one.
  static QString defaultFolder();

  // Creates the folder and takes its run marker. Where it cannot (a read-only home), the autosave is off and
  // offReason() says why: the app still starts.
  explicit SessionAutosave(const QString& folder = defaultFolder(), QObject* parent = nullptr);
  // Waits for the write in flight; this is the clean exit, so the autosave this run owns goes.
  ~SessionAutosave() override;

  // False while another TransportLens runs on the same folder, or where the folder cannot be written: this one
  // neither saves nor offers anything.
  bool active() const { return marker_ && marker_->held(); }
  QString offReason() const;
  // The previous run ended without a clean exit and left a session: offer it, then restore() or discard().
  bool hasRecoverable() const;
  QString path() const { return path_; }
  Session restore();  // loads it (FileError when it is unreadable); from now on this run owns the file
  void discard();     // removes it

  // Saves snapshot() a moment after each scheduleSave() (edits come in bursts while a slider moves), and every few
  // seconds for edits that send no signal (a view's settings); at once for the session on screen now.
  void watch(std::function<Session()> snapshot);
  void scheduleSave() { debounce_.start(); }

 signals:
  // A write failed (reported once until one succeeds again); the previous autosave is intact.
  void saveFailed(const QString& message);

 private:
  void saveNow();

  QString path_;
  std::unique_ptr<RunMarker> marker_;
  QString markerError_;  // why there is no marker
  std::function<Session()> snapshot_;
  QTimer debounce_;
  QTimer poll_;
  // One writer thread, so writes land in the order they were queued.
  QThreadPool writer_;
  std::atomic<uint64_t> latestSnapshot_{0};
  std::atomic<bool> ownsFile_{false};  // this run wrote or restored the autosave: a clean exit removes it
  // Touched by the writer thread only.
  std::string lastWritten_;
  bool failing_ = false;
};

}  // namespace tl
