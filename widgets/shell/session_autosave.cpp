#include "widgets/shell/session_autosave.h"

#include <QDir>
#include <QFile>
#include <QStandardPaths>

#include "common/errors.h"
#include "io/atomic_file.h"

namespace tl {
namespace {

constexpr int kDebounceMs = 500;    // a slider drag becomes one write
constexpr int kPollMs = 5000;       // view settings change without telling the window
const char* const kSessionFile = "session.json";
const char* const kMarkerFile = "running";

}  // namespace

QString SessionAutosave::defaultFolder() {
  // Named explicitly, so the app finds the same folder whatever QApplication calls itself.
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/TransportLens/autosave";
}

SessionAutosave::SessionAutosave(const QString& folder, QObject* parent)
    : QObject(parent), path_(QDir(folder).filePath(kSessionFile)) {
  try {
    ensureDirectory(folder.toStdString());
    marker_ = std::make_unique<RunMarker>(QDir(folder).filePath(kMarkerFile).toStdString());
  } catch (const FileError& e) {
    markerError_ = QString::fromStdString(e.what());
  }
  debounce_.setSingleShot(true);
  debounce_.setInterval(kDebounceMs);
  poll_.setInterval(kPollMs);
  connect(&debounce_, &QTimer::timeout, this, &SessionAutosave::saveNow);
  connect(&poll_, &QTimer::timeout, this, &SessionAutosave::saveNow);
  writer_.setMaxThreadCount(1);
}

SessionAutosave::~SessionAutosave() {
  writer_.waitForDone();
  if (active() && ownsFile_) QFile::remove(path_);
}

QString SessionAutosave::offReason() const {
  if (active()) return {};
  return marker_ ? tr("another TransportLens is running") : markerError_;
}

bool SessionAutosave::hasRecoverable() const {
  return active() && marker_->previousRunEndedUncleanly() && QFile::exists(path_);
}

Session SessionAutosave::restore() {
  ownsFile_ = true;
  return Session::load(path_.toStdString());
}

void SessionAutosave::discard() { QFile::remove(path_); }

void SessionAutosave::watch(std::function<Session()> snapshot) {
  if (!active()) return;
  snapshot_ = std::move(snapshot);
  poll_.start();
  saveNow();
}

void SessionAutosave::saveNow() {
  if (!snapshot_) return;  // not watching: autosave is off, or watch() has not been called yet
  // The snapshot is taken here, on the GUI thread (views hand over their state); JSON and disk go to the writer.
  const uint64_t generation = ++latestSnapshot_;
  writer_.start([this, generation, session = snapshot_()] {
    if (generation != latestSnapshot_) return;  // a newer snapshot is queued behind this one
    const std::string json = session.toJson().dump();
    if (json == lastWritten_) return;
    try {
      session.save(path_.toStdString());
      lastWritten_ = json;
      ownsFile_ = true;
      failing_ = false;
    } catch (const std::exception& e) {
      if (failing_) return;
      failing_ = true;
      const QString message = QString::fromStdString(e.what());
      QMetaObject::invokeMethod(this, [this, message] { emit saveFailed(message); }, Qt::QueuedConnection);
    }
  });
}

}  // namespace tl
