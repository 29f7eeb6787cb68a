// IDX reading: generated gzipped and plain files, and every malformed header or data size.
#include "data/idx.h"

#include <gtest/gtest.h>

#include "support/idx_files.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::idxBytes;
using test::throwsWith;
using test::writeGz;

std::string sequence(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char(i * 7 % 251);
  return s;
}

class Idx : public ::testing::Test {
 protected:
  std::string put(const std::string& bytes, const std::string& name = "x-idx3-ubyte") {
    const std::string path = dir.file(name);
    test::writeBytes(path, bytes);
    return path;
  }
  [[nodiscard]] ::testing::AssertionResult rejects(const std::string& path, std::vector<std::string> needles) {
    needles.push_back(path);
    return throwsWith<FileError>([&] { (void)readIdx(path); }, needles);
  }
  test::TempDir dir;
};

TEST_F(Idx, ReadsPlainAndGzippedFilesAlike) {
  const std::string data = sequence(3 * 4 * 5);
  const std::string bytes = idxBytes({3, 4, 5}, data);
  const std::string gz = dir.file("x-idx3-ubyte.gz");
  writeGz(gz, bytes);
  for (const std::string& path : {put(bytes), gz}) {
    const IdxArray a = readIdx(path);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 4, 5})) << path;
    ASSERT_EQ(a.values.size(), data.size()) << path;
    EXPECT_EQ(std::string(a.values.begin(), a.values.end()), data) << path;
  }
}

TEST_F(Idx, ReadsLabelsAndEmptyArrays) {
  EXPECT_EQ(readIdx(put(idxBytes({4}, std::string("\x01\x09\x00\x03", 4)))).values, (std::vector<uint8_t>{1, 9, 0, 3}));
  const IdxArray empty = readIdx(put(idxBytes({0, 28, 28}, "")));
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 28, 28}));
  EXPECT_TRUE(empty.values.empty());
}

TEST_F(Idx, ReadsDataLargerThanOneChunk) {
  const std::string data = sequence(3 * 1000 * 1000);
  const std::string gz = dir.file("big.gz");
  writeGz(gz, idxBytes({3000, 1000}, data));
  const IdxArray a = readIdx(gz);
  EXPECT_EQ(std::string(a.values.begin(), a.values.end()), data);
}

TEST_F(Idx, RejectsBadMagicTypesAndRanks) {
  EXPECT_TRUE(rejects(put(std::string("\x1f\x00\x08\x01", 4) + std::string(4, '\0')), {"magic"}));
  EXPECT_TRUE(rejects(put(idxBytes({2}, "abcdefgh", 0x0d)), {"element type 0x0d", "only unsigned bytes"}));
  EXPECT_TRUE(rejects(put(idxBytes({}, "")), {"dimension count 0"}));
  EXPECT_TRUE(rejects(put(std::string("\x00\x00", 2)), {"shorter than the 4-byte IDX magic"}));
  EXPECT_TRUE(rejects(put(""), {"shorter than the 4-byte IDX magic"}));
}

TEST_F(Idx, RejectsDataThatDoNotMatchTheDimensions) {
  EXPECT_TRUE(rejects(put(idxBytes({3, 4}, sequence(11))), {"3×4", "need 12 data bytes", "has 11", "truncated"}));
  EXPECT_TRUE(rejects(put(idxBytes({3, 4}, sequence(13))), {"past the 12 bytes", "3×4"}));
  EXPECT_TRUE(rejects(put(idxBytes({3, 4}, "").substr(0, 9)), {"inside dimension 1", "truncated"}));
  // A corrupt header claiming 2^32 × 2^32 × ... bytes fails without trying to allocate them.
  EXPECT_TRUE(rejects(put(idxBytes({0xffffffff, 0xffffffff, 0xffffffff}, "abc")), {"implausible"}));
  EXPECT_TRUE(rejects(put(idxBytes({60000, 28, 28}, "abc")), {"need 47040000 data bytes", "has 3"}));
}

TEST_F(Idx, RejectsDamagedGzipData) {
  const std::string gz = dir.file("x.gz");
  writeGz(gz, idxBytes({100, 100}, sequence(10000)));
  const std::string bytes = test::readBytes(gz);
  EXPECT_TRUE(rejects(put(bytes.substr(0, bytes.size() / 2), "cut.gz"), {"gzip", "truncated or corrupt"}));
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x55;
  EXPECT_TRUE(rejects(put(flipped, "flipped.gz"), {"gzip", "corrupt"}));
}

TEST_F(Idx, MissingFileIsNamed) { EXPECT_TRUE(rejects(dir.file("absent.gz"), {"no such file"})); }

}  // namespace
}  // namespace tl
