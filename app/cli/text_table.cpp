#include "text_table.h"

#include <algorithm>

#include "common/errors.h"

namespace tl::cli {
namespace {

// Characters on screen: UTF-8 continuation bytes (10xxxxxx) do not start a character.
size_t displayWidth(const std::string& text) {
  return size_t(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(const std::string& text, size_t width, TextTable::Align align) {
  const std::string fill(width - std::min(width, displayWidth(text)), ' ');
  return align == TextTable::Align::Left ? text + fill : fill + text;
}

}  // namespace

void TextTable::addRow(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw InvalidArgument("table row has " + std::to_string(cells.size()) + " cells for " +
                          std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<size_t> widths;
  for (const auto& c : columns_) widths.push_back(displayWidth(c.header));
  for (const auto& row : rows_)
    for (size_t j = 0; j < row.size(); ++j) widths[j] = std::max(widths[j], displayWidth(row[j]));

  auto line = [&](auto cellText) {
    std::string out;
    for (size_t j = 0; j < columns_.size(); ++j)
      out += (j ? "  " : "") + pad(cellText(j), widths[j], columns_[j].align);
    out.erase(out.find_last_not_of(' ') + 1);
    return out + "\n";
  };
  std::string text = line([&](size_t j) { return columns_[j].header; });
  text += line([&](size_t j) { return std::string(widths[j], '-'); });
  for (const auto& row : rows_) text += line([&](size_t j) { return row[j]; });
  return text;
}

}  // namespace tl::cli
