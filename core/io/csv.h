#pragma once
#include <string>

#include "common/matrix.h"

namespace tl {

// One row per matrix row, comma separated, full precision (17 significant digits); written atomically.
void writeCsv(const std::string& path, const MatD& m);
std::string encodeCsv(const MatD& m);

}  // namespace tl
