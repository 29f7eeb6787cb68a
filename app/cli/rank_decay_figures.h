#pragma once
// Figures of `tlens rank-decay` (--png, --svg, --pdf), drawn by the GUI's Rank decay view so that the
// files match the screen. Builds without the GUI refuse these options before any work starts.
#include <optional>
#include <string>

#include "rankdecay/experiment.h"

namespace tl::cli {

struct FigurePaths {
  std::optional<std::string> png, svg, pdf;
  bool any() const { return png || svg || pdf; }
};

// Throws Error naming TL_GUI when figures are asked for and this tlens cannot draw them.
void checkFiguresAvailable(const FigurePaths& paths);
void writeFigures(const rankdecay::RankDecayResult& result, const FigurePaths& paths);

}  // namespace tl::cli
