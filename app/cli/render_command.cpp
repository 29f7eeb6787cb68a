// `tlens render SESSION.json --out DIR`: replays a session headless and writes every view's figures
// through the GUI's own export code (widgets/figure_export.h), so the files match what the GUI shows.
// This is the only `tlens` translation unit that touches Qt, and only when built with TL_GUI.
#include <cstdlib>
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "session/engine.h"

#ifdef TL_WITH_GUI
#include <QApplication>

#include "widgets/shell/figure_export.h"
#endif

namespace tl::cli {
namespace {

CommandLine renderCommandLine() {
  return CommandLine("render", "Run a session file (as saved by the GUI) and write the figures of its views.",
                     {{"out", "DIR", "output folder for <view>.<format> files (created if missing)"}},
                     {{"SESSION.json", "session file; relative input paths resolve against its folder"}});
}

#ifdef TL_WITH_GUI
// renderFigures needs a QApplication. Without a display, the offscreen platform draws the 2-D views
// (docs/building.md#headless-runs); the 3-D view then reports itself as skipped. The session is loaded and
// run first, so its errors reach stderr before Qt starts (and prints its own start-up notes).
int renderWithQt(const std::string& sessionPath, const std::string& outDir) {
  const SessionResult result = runSession(Session::load(sessionPath));

  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY") && !std::getenv("QT_QPA_PLATFORM"))
    setenv("QT_QPA_PLATFORM", "offscreen", 0);
  static int argc = 1;
  static char name[] = "tlens";
  static char* argv[] = {name, nullptr};
  QApplication app(argc, argv);
  const RenderReport report = renderFigures(result, outDir);
  for (const auto& path : report.written) std::cout << "wrote " << path << "\n";
  for (const auto& reason : report.skipped) std::cout << "skipped " << reason << "\n";
  if (report.written.empty()) throw Error("no figure was written for " + sessionPath);
  return 0;
}
#endif

}  // namespace

int renderCommand(const Args& args) {
  CommandLine cl = renderCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage();
    return 0;
  }
  const std::string outDir = cl.required("out");
#ifdef TL_WITH_GUI
  return renderWithQt(cl.positionals().at(0), outDir);
#else
  throw Error("this tlens was built without the GUI library (TL_GUI=OFF), so it cannot render figures; "
              "rebuild with -DTL_GUI=ON");
#endif
}

}  // namespace tl::cli
