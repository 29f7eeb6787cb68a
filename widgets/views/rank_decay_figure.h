#pragma once
// `tlens rank-decay --png/--svg/--pdf`: one result drawn by the Rank decay view and written in the format the
// path's extension names (png, svg, pdf). Needs a QApplication.
#include <string>

#include "rankdecay/experiment.h"

namespace tl {

void writeRankDecayFigure(const rankdecay::RankDecayResult& result, const std::string& path);

}  // namespace tl
