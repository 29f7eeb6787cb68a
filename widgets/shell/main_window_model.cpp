// The window's ways in for model sources: File > Open checkpoint…, Recent and Sample checkpoints, and checkpoints
// and images dropped on the window. All of them go through the Source panel, which emits the new source.
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMenu>
#include <QMimeData>
#include <QStatusBar>
#include <QUrl>

#include "widgets/panels/source_panel.h"
#include "widgets/shell/checkpoint_files.h"
#include "widgets/shell/main_window.h"

namespace tl {
namespace {

QStringList droppedFiles(const QMimeData* mime) {
  QStringList paths;
  for (const QUrl& url : mime->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  return paths;
}

}  // namespace

void MainWindow::addCheckpointActions(QMenu* file) {
  QAction* open = file->addAction(tr("Open &checkpoint…"), this, [this] { sourcePanel_->openCheckpoint(); });
  open->setObjectName("openCheckpoint");
  QMenu* recent = file->addMenu(tr("&Recent checkpoints"));
  recent->setObjectName("recentCheckpoints");
  // Filled as it opens: the list grows whenever a checkpoint loads.
  connect(recent, &QMenu::aboutToShow, this, [this, recent] {
    recent->clear();
    const QStringList paths = recentCheckpoints();
    for (const QString& path : paths) recent->addAction(path, this, [this, path] { sourcePanel_->useCheckpoint(path); });
    if (paths.isEmpty()) recent->addAction(tr("(none yet)"))->setEnabled(false);
  });
  // The bundled models, one per normaliser they were trained with: the quickest way to compare them.
  QMenu* samples = file->addMenu(tr("&Sample checkpoints"));
  samples->setObjectName("sampleCheckpoints");
  for (const QString& path : sampleCheckpoints())
    samples->addAction(QFileInfo(path).fileName(), this, [this, path] { sourcePanel_->useCheckpoint(path); });
  if (samples->isEmpty()) samples->addAction(tr("(none found)"))->setEnabled(false);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  for (const QString& path : droppedFiles(event->mimeData()))
    if (classifyDroppedFile(path) != DroppedFileKind::Other) {
      event->acceptProposedAction();
      return;
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
  QString checkpoint, image;
  for (const QString& path : droppedFiles(event->mimeData())) {
    const DroppedFileKind kind = classifyDroppedFile(path);
    if (kind == DroppedFileKind::Checkpoint) checkpoint = path;
    if (kind == DroppedFileKind::Image) image = path;
  }
  if (checkpoint.isEmpty() && image.isEmpty()) return;
  event->acceptProposedAction();
  if (!image.isEmpty()) sourcePanel_->useImageFile(image);
  if (!checkpoint.isEmpty()) sourcePanel_->useCheckpoint(checkpoint);
  if (session_.source.kind != SourceSpec::Kind::Model)
    statusBar()->showMessage(tr("Open or drop a checkpoint to run it on %1").arg(QFileInfo(image).fileName()), 10000);
}

}  // namespace tl
