#include "widgets/shell/checkpoint_files.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QSettings>

namespace tl {
namespace {

const QStringList kWeightSuffixes{"safetensors", "pt", "pth", "bin"};
const QStringList kImageSuffixes{"png", "jpg", "jpeg"};
const char* const kRecentKey = "recentCheckpoints";

// Explicit names, so the list is found whatever QApplication calls itself (the app, a test binary).
QSettings settings() { return QSettings("TransportLens", "TransportLens"); }

}  // namespace

DroppedFileKind classifyDroppedFile(const QString& path) {
  const QFileInfo info(path);
  if (info.isDir() || info.fileName() == "config.json") return DroppedFileKind::Checkpoint;
  const QString suffix = info.suffix().toLower();
  if (kWeightSuffixes.contains(suffix)) return DroppedFileKind::Checkpoint;
  if (kImageSuffixes.contains(suffix)) return DroppedFileKind::Image;
  if (suffix == "json") return DroppedFileKind::Session;
  return DroppedFileKind::Other;
}

QString checkpointPathOf(const QString& path) {
  const QFileInfo info(path);
  return info.fileName() == "config.json" ? info.absolutePath() : path;
}

QString chooseCheckpointFile(QWidget* parent, const QString& start) {
  const QString path = QFileDialog::getOpenFileName(
      parent, QObject::tr("Open checkpoint — a weights file, or a checkpoint folder's config.json"), start,
      QObject::tr("ViT checkpoints (config.json *.safetensors *.pt *.pth *.bin);;All files (*)"));
  return path.isEmpty() ? path : checkpointPathOf(path);
}

QString chooseCheckpointFolder(QWidget* parent, const QString& start) {
  return QFileDialog::getExistingDirectory(
      parent, QObject::tr("Open checkpoint folder (config.json and model.safetensors)"), start);
}

QString chooseImageFile(QWidget* parent, const QString& start) {
  return QFileDialog::getOpenFileName(parent, QObject::tr("Open image for the model"), start,
                                      QObject::tr("Images (*.png *.jpg *.jpeg)"));
}

QStringList sampleCheckpoints() {
  QStringList folders;
  const QDir samples(QStringLiteral(TL_SOURCE_DIR "/sample_checkpoints"));
  for (const QString& name : samples.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
    if (QFileInfo::exists(samples.filePath(name + "/config.json"))) folders << samples.filePath(name);
  return folders;
}

QStringList recentCheckpoints() {
  QStringList existing;
  for (const QString& path : settings().value(kRecentKey).toStringList())
    if (QFileInfo::exists(path)) existing << path;
  return existing;
}

void rememberCheckpoint(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList recent = settings().value(kRecentKey).toStringList();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kRecentCheckpoints) recent.removeLast();
  settings().setValue(kRecentKey, recent);
}

}  // namespace tl
