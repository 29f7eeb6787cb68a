#pragma once
// What an exported figure file says about itself, read from its bytes without Qt (so the `tlens render` tests
// use it too): a complete PNG, SVG or PDF file that declares the size the export settings ask for.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "session/session.h"

namespace tl::test {

// The size of one format (widgets/plot/plot_export.h): PNG is width×height pixels times the scale, read from
// the IHDR chunk; SVG and PDF are vector, width×height user units in the root element's viewBox (the width and
// height attributes are in mm) and points in the page's MediaBox.
[[nodiscard]] inline ::testing::AssertionResult isFigure(const std::string& bytes, const std::string& format,
                                                         const ExportSettings& settings) {
  const double scale = format == "png" ? settings.scale : 1.0;
  const double wantWidth = settings.width * scale, wantHeight = settings.height * scale;
  double width = -1, height = -1;
  if (format == "png") {
    // Signature, then the IHDR chunk: length (4 bytes), type (4), width and height (4 each, big-endian).
    if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || bytes.compare(12, 4, "IHDR") != 0)
      return ::testing::AssertionFailure() << "not a PNG file";
    if (bytes.compare(bytes.size() - 8, 4, "IEND") != 0) return ::testing::AssertionFailure() << "PNG without IEND";
    auto bigEndian = [&](size_t at) {
      uint32_t v = 0;
      for (size_t i = 0; i < 4; ++i) v = (v << 8) | uint8_t(bytes[at + i]);
      return double(v);
    };
    width = bigEndian(16);
    height = bigEndian(20);
  } else if (format == "svg") {
    const size_t root = bytes.find("<svg"), box = bytes.find("viewBox=\"0 0 ", root);
    if (root == std::string::npos || bytes.find("</svg>") == std::string::npos || box > bytes.find('>', root))
      return ::testing::AssertionFailure() << "not a complete SVG file with a viewBox on its root element";
    std::istringstream(bytes.substr(box + 13, 40)) >> width >> height;
  } else if (format == "pdf") {
    const size_t box = bytes.find("/MediaBox [0 0 ");
    if (bytes.compare(0, 5, "%PDF-") != 0 || bytes.find("%%EOF") == std::string::npos || box == std::string::npos)
      return ::testing::AssertionFailure() << "not a complete PDF file with a MediaBox";
    std::istringstream(bytes.substr(box + 15, 60)) >> width >> height;
  } else {
    return ::testing::AssertionFailure() << "unknown figure format '" << format << "'";
  }
  if (width != wantWidth || height != wantHeight)
    return ::testing::AssertionFailure() << format << " of " << width << "×" << height << ", expected " << wantWidth
                                         << "×" << wantHeight;
  return ::testing::AssertionSuccess();
}

}  // namespace tl::test
