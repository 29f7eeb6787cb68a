#pragma once
#include <string>
#include <vector>

#include "common/matrix.h"

namespace tl {

// One row per matrix row, comma separated, full precision (17 significant digits); written atomically.
void writeCsv(const std::string& path, const MatD& m);
std::string encodeCsv(const MatD& m);

// A table of text cells: header line then one line per row. Cells holding a comma, a double quote or a line
// break are quoted (RFC 4180: "…" with inner quotes doubled). Every row must have the header's width.
using CsvRow = std::vector<std::string>;
std::string encodeCsvTable(const CsvRow& header, const std::vector<CsvRow>& rows);

}  // namespace tl
