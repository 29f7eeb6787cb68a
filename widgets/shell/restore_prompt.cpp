#include "widgets/shell/restore_prompt.h"

#include <QFileInfo>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>

namespace tl {

std::optional<RestoreAnswer> parseRestoreAnswer(const QString& text) {
  if (text == "ask") return RestoreAnswer::Ask;
  if (text == "yes") return RestoreAnswer::Restore;
  if (text == "no") return RestoreAnswer::Discard;
  return std::nullopt;
}

std::unique_ptr<QMessageBox> makeRestoreQuestion(const QString& autosavePath, QWidget* parent) {
  auto box = std::make_unique<QMessageBox>(QMessageBox::Question, QObject::tr("TransportLens"),
                                           QObject::tr("TransportLens did not close normally last time."),
                                           QMessageBox::NoButton, parent);
  const QString savedAt = QLocale().toString(QFileInfo(autosavePath).lastModified(), QLocale::ShortFormat);
  box->setInformativeText(QObject::tr("Restore the session it was showing (autosaved %1)?\n"
                                      "Discard starts with the usual session and deletes the autosave.")
                              .arg(savedAt));
  box->setDetailedText(autosavePath);
  QPushButton* restore = box->addButton(QObject::tr("Restore"), QMessageBox::AcceptRole);
  restore->setObjectName("restoreAutosave");
  box->addButton(QObject::tr("Discard"), QMessageBox::DestructiveRole)->setObjectName("discardAutosave");
  box->setDefaultButton(restore);
  return box;
}

bool shouldRestore(RestoreAnswer answer, const QString& autosavePath) {
  if (answer != RestoreAnswer::Ask) return answer == RestoreAnswer::Restore;
  const auto box = makeRestoreQuestion(autosavePath);
  box->exec();
  // Only an explicit Discard deletes: a box closed without an answer loses nothing.
  return box->buttonRole(box->clickedButton()) != QMessageBox::DestructiveRole;
}

}  // namespace tl
