// The only `tlens rank-decay` translation unit that touches Qt, and only when built with TL_GUI.
#include "rank_decay_figures.h"

#include <cstdlib>

#include "common/errors.h"

#ifdef TL_WITH_GUI
#include <QApplication>

#include "widgets/views/rank_decay_figure.h"
#endif

namespace tl::cli {

void checkFiguresAvailable(const FigurePaths& paths) {
#ifndef TL_WITH_GUI
  if (paths.any())
    throw Error("this tlens was built without the GUI library (TL_GUI=OFF), so it cannot draw --png/--svg/--pdf; "
                "rebuild with -DTL_GUI=ON or use the JSON and CSV");
#else
  (void)paths;
#endif
}

void writeFigures(const rankdecay::RankDecayResult& result, const FigurePaths& paths) {
  if (!paths.any()) return;
#ifdef TL_WITH_GUI
  // Without a display the offscreen platform draws QCustomPlot (docs/building.md#headless-runs).
  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY") && !std::getenv("QT_QPA_PLATFORM"))
    setenv("QT_QPA_PLATFORM", "offscreen", 0);
  static int argc = 1;
  static char name[] = "tlens";
  static char* argv[] = {name, nullptr};
  QApplication app(argc, argv);
  for (const auto& path : {paths.png, paths.svg, paths.pdf})
    if (path) writeRankDecayFigure(result, *path);
#else
  (void)result;
#endif
}

}  // namespace tl::cli
