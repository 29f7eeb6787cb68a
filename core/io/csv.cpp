#include "io/csv.h"

#include <cstdio>

#include "common/errors.h"
#include "io/atomic_file.h"

namespace tl {

std::string encodeCsv(const MatD& m) {
  std::string out;
  char buf[40];
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      std::snprintf(buf, sizeof buf, "%.17g", m(i, j));
      if (j) out += ',';
      out += buf;
    }
    out += '\n';
  }
  return out;
}

namespace {

std::string csvCell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void appendCsvLine(std::string& out, const CsvRow& cells) {
  for (size_t j = 0; j < cells.size(); ++j) out += (j ? "," : "") + csvCell(cells[j]);
  out += '\n';
}

}  // namespace

std::string encodeCsvTable(const CsvRow& header, const std::vector<CsvRow>& rows) {
  std::string out;
  appendCsvLine(out, header);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != header.size())
      throw InvalidArgument("CSV row " + std::to_string(i + 1) + " has " + std::to_string(rows[i].size()) +
                            " cells but the header has " + std::to_string(header.size()));
    appendCsvLine(out, rows[i]);
  }
  return out;
}

void writeCsv(const std::string& path, const MatD& m) { writeFileAtomically(path, encodeCsv(m)); }

}  // namespace tl
