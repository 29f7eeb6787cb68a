// CSV export: one row per matrix row, full precision (17 significant digits), written atomically.
#include "io/csv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

std::vector<std::vector<double>> parseCsv(const std::string& text) {
  std::vector<std::vector<double>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<double> row;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) row.push_back(std::strtod(cell.c_str(), nullptr));
    rows.push_back(row);
  }
  return rows;
}

TEST(Csv, RoundTripsAtFullPrecision) {
  MatD m = test::gaussian(4, 3, 1);
  m(0, 0) = 0.1;
  m(1, 1) = 1.0 / 3.0;
  m(2, 2) = -1e-300;
  m(3, 0) = 12345678901234567.0;
  const auto rows = parseCsv(encodeCsv(m));
  ASSERT_EQ(rows.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(rows[i].size(), 3u) << "row " << i;
    for (int j = 0; j < 3; ++j) EXPECT_EQ(rows[i][j], m(i, j)) << i << "," << j;
  }
}

TEST(Csv, WritesFileAtomically) {
  test::TempDir dir;
  const MatD m = test::gaussian(2, 2, 2);
  writeCsv(dir.file("m.csv"), m);
  EXPECT_EQ(test::readBytes(dir.file("m.csv")), encodeCsv(m));
  EXPECT_TRUE(test::throwsWith<FileError>([&] { writeCsv((dir.path() / "no" / "m.csv").string(), m); }));
}

TEST(Csv, TableQuotesCellsThatNeedIt) {
  const std::string text = encodeCsvTable({"operator", "gini"}, {{"sinkhorn:T=20,eps=1", "0.5"},
                                                                  {"say \"hi\"", ""},
                                                                  {"softmax", "1e-3"}});
  EXPECT_EQ(text, "operator,gini\n\"sinkhorn:T=20,eps=1\",0.5\n\"say \"\"hi\"\"\",\nsoftmax,1e-3\n");
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { (void)encodeCsvTable({"a", "b"}, {{"1"}}); }, {"row 1", "header"}));
}

}  // namespace
}  // namespace tl
