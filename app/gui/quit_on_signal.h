#pragma once
// SIGTERM, SIGINT and SIGHUP (a logout, `kill`, Ctrl-C in the terminal) end the app the way File › Quit does:
// the event loop returns and everything is destroyed in order, so the run counts as a clean exit and leaves no
// session to restore (widgets/shell/session_autosave.h). A second signal takes the default action, so a hung
// app still dies on a repeated Ctrl-C.
namespace tl {

// Call once, after the QApplication exists.
void quitOnTerminationSignals();

}  // namespace tl
