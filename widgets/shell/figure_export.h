#pragma once
// Headless figure rendering shared by the GUI's export and `tlens render`: every view the GUI shows for a
// session is drawn into files. Plain C++ interface (no Qt types) so app/ code can call it from any TU.
// Needs a QApplication (the offscreen platform is enough for 2-D views; the 3-D view needs an X display
// and is reported as skipped without one).
#include <string>
#include <vector>

#include "session/engine.h"

namespace tl {

struct RenderReport {
  std::vector<std::string> written;  // paths of files written
  std::vector<std::string> skipped;  // "cloud3d: needs an X display (run under xvfb-run)" etc.
};

// Writes <outDir>/<view>.<format> for each view in result.session.views and each format in
// result.session.exportSettings.formats that the view supports (3-D: png and pdf only). Atomic writes.
RenderReport renderFigures(const SessionResult& result, const std::string& outDir);

}  // namespace tl
