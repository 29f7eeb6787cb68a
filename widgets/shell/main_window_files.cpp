// The File menu's actions that write: sessions, figure exports and plan exports (opening: main_window_open.cpp).
// Failures are reported and the window carries on; every write is atomic, so a failed one leaves any earlier file
// untouched.
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QStatusBar>
#include <map>

#include "common/errors.h"
#include "widgets/shell/main_window.h"
#include "widgets/shell/session_files.h"
#include "widgets/views/view.h"

namespace tl {
namespace {

const std::map<std::string, QString> kFormatFilters = {
    {"png", "PNG image (*.png)"}, {"svg", "SVG vector figure (*.svg)"}, {"pdf", "PDF document (*.pdf)"}, {"csv", "CSV tables (*.csv)"}};

}  // namespace

void MainWindow::saveSessionFile(bool askForPath) {
  QString path = sessionPath_;
  if (askForPath || path.isEmpty()) {
    path = QFileDialog::getSaveFileName(this, tr("Save session"), path.isEmpty() ? "session.json" : path,
                                        tr("TransportLens sessions (*.json)"));
    if (path.isEmpty()) return;
  }
  try {
    currentSession().save(path.toStdString());
    sessionPath_ = path;
    setWindowTitle("TransportLens — " + path);
    statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  } catch (const std::exception& e) {
    reportError(tr("Could not save the session"), e.what());
  }
}

void MainWindow::exportView(View* view) {
  view->drawPending();  // a hidden view exports the result on screen, not the one it last drew
  if (const std::string why = view->exportUnavailableReason(); !why.empty()) {
    reportError(tr("Cannot export %1").arg(view->title()), QString::fromStdString(why));
    return;
  }
  QStringList filters;
  for (const std::string& format : view->exportFormats()) filters << kFormatFilters.at(format);
  QString chosenFilter = filters.front();
  const QString suggested = QString::fromStdString(view->viewName() + "." + view->exportFormats().front());
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export %1").arg(view->title()), suggested, filters.join(";;"), &chosenFilter);
  if (path.isEmpty()) return;
  // The extension decides the format; without one, the chosen filter does.
  std::string format = QFileInfo(path).suffix().toLower().toStdString();
  QString target = path;
  if (format.empty()) {
    for (const auto& [name, filter] : kFormatFilters)
      if (filter == chosenFilter) format = name;
    target += "." + QString::fromStdString(format);
  }
  try {
    view->exportFigure(target.toStdString(), format, session_.exportSettings);
    statusBar()->showMessage(tr("Wrote %1").arg(target), 5000);
  } catch (const std::exception& e) {
    reportError(tr("Could not export %1").arg(view->title()), e.what());
  }
}

void MainWindow::exportPlanFile() {
  if (!last_ || last_->runs.empty()) {
    reportError(tr("Nothing to export"), tr("There is no result yet."));
    return;
  }
  QString chosenFilter;
  QString path = QFileDialog::getSaveFileName(this, tr("Export plan (attention scale A = n·P, rows = queries)"),
                                              "plan.npy", tr("NumPy array (*.npy);;CSV table (*.csv)"),
                                              &chosenFilter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += chosenFilter.contains("csv") ? ".csv" : ".npy";
  try {
    exportPlan(last_->runs.front().result.plan, path.toStdString());
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
  } catch (const std::exception& e) {
    reportError(tr("Could not export the plan"), e.what());
  }
}

}  // namespace tl
