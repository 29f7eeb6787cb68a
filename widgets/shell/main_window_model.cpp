// The window's menu ways in for model sources: File > Open checkpoint…, Recent and Sample checkpoints (files opened
// or dropped: main_window_open.cpp). All of them go through the Source panel, which emits the new source.
#include <QFileInfo>
#include <QMenu>

#include "widgets/panels/source_panel.h"
#include "widgets/shell/checkpoint_files.h"
#include "widgets/shell/main_window.h"

namespace tl {

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

}  // namespace tl
