#include "io/csv.h"

#include <cstdio>

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

void writeCsv(const std::string& path, const MatD& m) { writeFileAtomically(path, encodeCsv(m)); }

}  // namespace tl
