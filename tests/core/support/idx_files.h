#pragma once
// Writes IDX files for the data tests: magic (0, 0, type, rank), big-endian dimensions, then the data;
// optionally gzipped as the dataset packages ship them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tl::test {

inline std::string idxBytes(const std::vector<uint32_t>& dims, const std::string& data, uint8_t type = 0x08) {
  std::string out = {0, 0, char(type), char(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out += char((d >> shift) & 0xff);
  return out + data;
}

inline void writeGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size())) << path;
  ASSERT_EQ(gzclose(f), Z_OK) << path;
}

}  // namespace tl::test
