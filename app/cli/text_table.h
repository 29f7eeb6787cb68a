#pragma once
// A plain-text table for the terminal: columns padded to their widest cell (counted in characters, so
// UTF-8 such as "±" aligns), text columns left-aligned, number columns right-aligned, a rule under the header.
#include <string>
#include <vector>

namespace tl::cli {

class TextTable {
 public:
  enum class Align { Left, Right };
  struct Column {
    std::string header;
    Align align = Align::Right;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void addRow(std::vector<std::string> cells);  // throws InvalidArgument unless one cell per column
  std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tl::cli
