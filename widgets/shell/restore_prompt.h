#pragma once
// The question a start after a crash asks: restore the autosaved session (session_autosave.h) or discard it.
// Scripts and tests answer it in advance on the command line (--restore-autosave=yes|no), so a start never
// waits on a modal box nobody can see.
#include <QString>
#include <memory>
#include <optional>

class QMessageBox;
class QWidget;

namespace tl {

enum class RestoreAnswer { Ask, Restore, Discard };
// "ask" | "yes" | "no"; nullopt for anything else.
std::optional<RestoreAnswer> parseRestoreAnswer(const QString& text);

// The box itself (Restore / Discard, Restore the default), for the app and for a screenshot of it.
std::unique_ptr<QMessageBox> makeRestoreQuestion(const QString& autosavePath, QWidget* parent = nullptr);
// Asks when `answer` is Ask (only a click on Discard says no); otherwise returns the preset answer. True: restore.
bool shouldRestore(RestoreAnswer answer, const QString& autosavePath);

}  // namespace tl
