#pragma once
// The files a model source is made of, as the user hands them over: a checkpoint (a folder, or a weights
// file .safetensors/.pt/.pth/.bin) and an image (PNG/JPEG), whether picked in a dialog, dropped on the
// window (which also takes sessions), taken from the recent-checkpoints list (QSettings, newest first, at
// most kRecentCheckpoints) or from the bundled sample checkpoints.
#include <QString>
#include <QStringList>

class QWidget;

namespace tl {

constexpr int kRecentCheckpoints = 8;

enum class DroppedFileKind { Session, Checkpoint, Image, Other };
// Folders and weights files are checkpoints (a folder's config.json stands for its folder); other .json files
// are sessions; PNG and JPEG files are images.
DroppedFileKind classifyDroppedFile(const QString& path);
// The path readVitCheckpoint takes: config.json becomes its folder; anything else stays as it is.
QString checkpointPathOf(const QString& path);

// Dialogs; each returns an empty string when cancelled.
QString chooseCheckpointFile(QWidget* parent, const QString& start);  // weights file, or config.json → folder
QString chooseCheckpointFolder(QWidget* parent, const QString& start);
QString chooseImageFile(QWidget* parent, const QString& start);

// The checkpoints bundled with TransportLens (sample_checkpoints/<name>/ with a config.json), by name.
QStringList sampleCheckpoints();

// Existing checkpoints only: a deleted one is not offered again.
QStringList recentCheckpoints();
void rememberCheckpoint(const QString& path);  // to the front; the oldest beyond the limit drop off

}  // namespace tl
