// The zip container: stored and deflated entries, and every way a damaged archive is refused.
#include "io/checkpoint/zip_archive.h"

#include <gtest/gtest.h>

#include "support/test_util.h"
#include "support/zip_writer.h"

namespace tl {
namespace {

using test::makeZip;
using test::throwsWith;
using test::ZipLayout;

void setLe(std::string& bytes, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) bytes[at + size_t(i)] = char((v >> (8 * i)) & 0xff);
}

[[nodiscard]] ::testing::AssertionResult openFails(const std::string& bytes, const std::vector<std::string>& needles) {
  std::vector<std::string> all = needles;
  all.push_back("ckpt.pt");
  return throwsWith<FileError>([&] { ZipArchive zip("ckpt.pt", bytes); }, all);
}

TEST(ZipArchive, ListsAndReadsStoredAndDeflatedEntries) {
  const std::string big(5000, 'x');
  ZipArchive zip("a.zip",
                 makeZip({{"m/data.pkl", "pickle"}, {"m/data/0", big, true}, {"m/empty", ""}}, nullptr, {"a comment"}));
  ASSERT_EQ(zip.entries().size(), 3u);
  EXPECT_EQ(zip.entries()[1].name, "m/data/0");
  EXPECT_EQ(zip.entries()[1].method, 8);
  EXPECT_LT(zip.entries()[1].compressedSize, 100u);
  EXPECT_EQ(zip.contents(*zip.find("m/data.pkl")), "pickle");
  EXPECT_EQ(zip.contents(*zip.find("m/data/0")), big);
  EXPECT_EQ(zip.contents(*zip.find("m/data/0")), big);  // second read comes from the checked cache
  EXPECT_EQ(zip.contents(*zip.find("m/empty")), "");
  EXPECT_EQ(zip.find("m/missing"), nullptr);
}

TEST(ZipArchive, ReadsAnArchiveWrittenByPythonWithDeflate) {
  ZipArchive zip = ZipArchive::open(std::string(TL_FIXTURE_DIR) + "/checkpoint_files/state_dict_deflated.pt");
  const ZipEntry* pickle = zip.find("state_dict/data.pkl");
  ASSERT_NE(pickle, nullptr);
  EXPECT_EQ(pickle->method, 8);
  EXPECT_EQ(zip.contents(*pickle).substr(0, 2), "\x80\x02");
}

TEST(ZipArchive, RejectsTruncatedAndNonZipFiles) {
  const std::string zip = makeZip({{"m/data.pkl", "pickle bytes"}});
  EXPECT_TRUE(openFails("", {"too short", "truncated"}));
  EXPECT_TRUE(openFails(zip.substr(0, zip.size() - 4), {"end-of-central-directory", "truncated"}));
  EXPECT_TRUE(openFails(std::string(100, 'z'), {"end-of-central-directory"}));
  EXPECT_TRUE(openFails(zip.substr(30), {"central directory", "corrupt"}));
}

TEST(ZipArchive, RejectsCrcMismatchNamingTheEntry) {
  ZipLayout layout;
  std::string bytes = makeZip({{"m/data/3", "0123456789"}}, &layout);
  bytes[layout.localHeaders[0] + 30 + 8 + 2] ^= 0x01;  // one bit of the data
  ZipArchive zip("ckpt.pt", bytes);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)zip.contents(zip.entries()[0]); },
                                    {"ckpt.pt", "zip entry 'm/data/3'", "CRC", "corrupt"}));
}

TEST(ZipArchive, RejectsCorruptDeflateData) {
  ZipLayout layout;
  std::string bytes = makeZip({{"m/data/0", std::string(3000, 'q'), true}}, &layout);
  bytes[layout.localHeaders[0] + 30 + 8] = char(0xff);  // an invalid deflate block type
  ZipArchive zip("ckpt.pt", bytes);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)zip.contents(zip.entries()[0]); }, {"'m/data/0'", "inflate"}));
}

TEST(ZipArchive, ReadsZip64RecordsAndExtraFields) {
  test::ZipOptions zip64;
  zip64.zip64 = true;
  ZipArchive zip("z.zip",
                 makeZip({{"m/data.pkl", "pickle"}, {"m/data/0", std::string(300, 'w'), true}}, nullptr, zip64));
  ASSERT_EQ(zip.entries().size(), 2u);
  EXPECT_EQ(zip.entries()[1].uncompressedSize, 300u);
  EXPECT_EQ(zip.contents(zip.entries()[0]), "pickle");
  EXPECT_EQ(zip.contents(zip.entries()[1]), std::string(300, 'w'));
}

TEST(ZipArchive, RejectsBrokenZip64Records) {
  test::ZipOptions zip64;
  zip64.zip64 = true;
  ZipLayout layout;
  const std::string good = makeZip({{"m/data.pkl", "abc"}}, &layout, zip64);
  std::string noLocator = good;
  setLe(noLocator, layout.endRecord - 20, 0, 4);  // the locator's signature
  EXPECT_TRUE(openFails(noLocator, {"ZIP64 record that is missing", "corrupt"}));

  std::string badRecord = good;
  setLe(badRecord, layout.endRecord - 20 + 8, 3, 8);  // locator points into the central directory
  EXPECT_TRUE(openFails(badRecord, {"ZIP64 end record is missing at byte 3"}));

  std::string noExtra = good;
  setLe(noExtra, layout.centralHeaders[0] + 46 + 10, 0x9999, 2);  // the extra field's id
  EXPECT_TRUE(openFails(noExtra, {"'m/data.pkl'", "ZIP64 extra field that is missing"}));

  std::string shortExtra = good;
  setLe(shortExtra, layout.centralHeaders[0] + 46 + 10 + 2, 8, 2);  // the extra field's length
  EXPECT_TRUE(openFails(shortExtra, {"'m/data.pkl'", "too short"}));
}

TEST(ZipArchive, RejectsEncryptionAndUnknownCompression) {
  ZipLayout layout;
  const std::string good = makeZip({{"m/data.pkl", "abc"}}, &layout);
  std::string encrypted = good;
  setLe(encrypted, layout.centralHeaders[0] + 8, 1, 2);
  EXPECT_TRUE(openFails(encrypted, {"'m/data.pkl'", "encrypted"}));

  std::string split = good;
  setLe(split, layout.endRecord + 4, 1, 2);
  EXPECT_TRUE(openFails(split, {"multi-disk"}));

  std::string bzip2 = good;
  setLe(bzip2, layout.centralHeaders[0] + 10, 12, 2);
  ZipArchive zip("ckpt.pt", bzip2);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)zip.contents(zip.entries()[0]); },
                                    {"'m/data.pkl'", "compression method 12", "not supported"}));
}

TEST(ZipArchive, RejectsOffsetsAndSizesOutsideTheFile) {
  ZipLayout layout;
  const std::string good = makeZip({{"m/a", "first"}, {"m/b", "second"}}, &layout);

  std::string badLocal = good;
  setLe(badLocal, layout.centralHeaders[1] + 42, 1000000, 4);
  EXPECT_TRUE(openFails(badLocal, {"'m/b'", "no local header at byte 1000000"}));

  std::string oversized = good;
  setLe(oversized, layout.centralHeaders[1] + 20, 1u << 20, 4);
  EXPECT_TRUE(openFails(oversized, {"'m/b'", "run into the central directory", "truncated or corrupt"}));

  std::string directoryBeyond = good;
  setLe(directoryBeyond, layout.endRecord + 12, 1u << 20, 4);
  EXPECT_TRUE(openFails(directoryBeyond, {"central directory", "beyond"}));

  // Long names make the directory big enough that one more entry is plausible, until it is read.
  ZipLayout longLayout;
  std::string countTooHigh = makeZip({{std::string(60, 'a'), "1"}, {std::string(60, 'b'), "2"}}, &longLayout);
  setLe(countTooHigh, longLayout.endRecord + 8, 3, 2);
  setLe(countTooHigh, longLayout.endRecord + 10, 3, 2);
  EXPECT_TRUE(openFails(countTooHigh, {"central directory entry 2", "corrupt"}));

  std::string countAbsurd = good;
  setLe(countAbsurd, layout.endRecord + 8, 60000, 2);
  setLe(countAbsurd, layout.endRecord + 10, 60000, 2);
  EXPECT_TRUE(openFails(countAbsurd, {"claims 60000 entries", "corrupt"}));

  std::string storedSizesDiffer = good;
  setLe(storedSizesDiffer, layout.centralHeaders[0] + 24, 4, 4);
  ZipArchive zip("ckpt.pt", storedSizesDiffer);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)zip.contents(*zip.find("m/a")); }, {"'m/a'", "sizes differ"}));
}

TEST(ZipArchive, RejectsDuplicateEntryNames) {
  EXPECT_TRUE(openFails(makeZip({{"m/a", "1"}, {"m/a", "2"}}), {"'m/a'", "appears twice"}));
}

TEST(ZipArchive, RejectsADeflatedEntryClaimingAnAbsurdSize) {
  ZipLayout layout;
  std::string bytes = makeZip({{"m/a", "tiny", true}}, &layout);
  setLe(bytes, layout.centralHeaders[0] + 24, 0xfffffff0, 4);
  ZipArchive zip("ckpt.pt", bytes);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)zip.contents(zip.entries()[0]); }, {"'m/a'", "claims", "corrupt"}));
}

}  // namespace
}  // namespace tl
