#include "widgets/shell/figure_export.h"

#include <QApplication>
#include <algorithm>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "widgets/shell/view_factory.h"

namespace tl {

RenderReport renderFigures(const SessionResult& result, const std::string& outDir) {
  if (!QApplication::instance())
    throw Error("renderFigures needs a QApplication (the offscreen platform is enough for 2-D views)");
  ensureDirectory(outDir);
  const ExportSettings& settings = result.session.exportSettings;
  auto shared = std::make_shared<const SessionResult>(result);
  RenderReport report;
  for (const std::string& name : result.session.views) {
    std::unique_ptr<View> view = makeView(name);
    view->resize(settings.width, settings.height);
    if (result.session.viewState.contains(name)) view->restoreState(result.session.viewState.at(name));
    view->setResult(shared);
    view->finishPending();
    const std::vector<std::string> supported = view->exportFormats();
    if (const std::string why = view->exportUnavailableReason(); !why.empty()) {
      report.skipped.push_back(name + ": " + why);
      continue;
    }
    for (const std::string& format : settings.formats) {
      if (std::find(supported.begin(), supported.end(), format) == supported.end()) {
        report.skipped.push_back(name + "." + format + ": the " + name + " view does not export " + format);
        continue;
      }
      const std::string path = outDir + "/" + name + "." + format;
      view->exportFigure(path, format, settings);
      report.written.push_back(path);
    }
  }
  return report;
}

}  // namespace tl
