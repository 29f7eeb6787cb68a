// Files the user hands to the window, through File › Open or by dropping them on it, all through openFile: a
// session opens; a checkpoint or an image becomes the model source (through the Source panel); anything else is
// refused with a message. A file that turns out to be corrupt is reported and the result on screen stays.
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMimeData>
#include <QStatusBar>
#include <QUrl>
#include <algorithm>

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

void MainWindow::chooseFileToOpen() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open a session, a checkpoint or an image"), QFileInfo(sessionPath_).path(),
      tr("TransportLens sessions (*.json);;ViT checkpoints (config.json *.safetensors *.pt *.pth *.bin);;"
         "Images for the model (*.png *.jpg *.jpeg);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::openFile(const QString& path) {
  switch (classifyDroppedFile(path)) {
    case DroppedFileKind::Session:
      try {
        loadSession(Session::load(path.toStdString()), path);
      } catch (const std::exception& e) {
        reportError(tr("Could not open the session"), e.what());
      }
      return;
    case DroppedFileKind::Checkpoint:
      sourcePanel_->useCheckpoint(path);  // read by the Engine: a corrupt one fails there and is reported
      return;
    case DroppedFileKind::Image:
      sourcePanel_->useImageFile(path);
      if (session_.source.kind != SourceSpec::Kind::Model)
        statusBar()->showMessage(tr("Open or drop a checkpoint to run it on %1").arg(QFileInfo(path).fileName()),
                                 10000);
      return;
    case DroppedFileKind::Other:
      reportError(tr("Cannot open %1").arg(QFileInfo(path).fileName()),
                  tr("TransportLens opens sessions (.json), ViT checkpoints (a folder, its config.json, .safetensors, "
                     ".pt, .pth, .bin) and images for the model (.png, .jpg). NumPy Q and K files: File › Open .npy…"));
      return;
  }
}

// Every local file is taken, so what the window cannot open gets a message rather than a silent refusal.
void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!droppedFiles(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths = droppedFiles(event->mimeData());
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  // Images first: a checkpoint and an image dropped together run the checkpoint on that image.
  std::stable_partition(paths.begin(), paths.end(),
                        [](const QString& path) { return classifyDroppedFile(path) == DroppedFileKind::Image; });
  for (const QString& path : paths) openFile(path);
}

}  // namespace tl
