// File parameters are read once per distinct file (io/npy_cache.h), and again when the file changes.
#include "io/npy_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "io/npy.h"
#include "support/test_util.h"

namespace tl {
namespace {

TEST(NpyCache, ReadsWhatTheReaderReadsAndNoticesAChangedFile) {
  test::TempDir dir;
  const std::string path = dir.file("a.npy");
  MatD a(2, 3);
  a << 1, 2, 3, 4, 5, 6;
  writeNpy(path, a);
  EXPECT_TRUE(test::matricesIdentical(readNpyMatrixCached(path), a));
  EXPECT_TRUE(test::matricesIdentical(readNpyMatrixCached(path), a)) << "the cached copy is the same";

  // Same path, other content and size: the key (path, size, time) changes, so the file is read again.
  MatD b = MatD::Constant(3, 3, 7.0);
  writeNpy(path, b);
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
  EXPECT_TRUE(test::matricesIdentical(readNpyMatrixCached(path), b));
}

TEST(NpyCache, UnreadableFilesGetTheReadersError) {
  test::TempDir dir;
  EXPECT_TRUE(test::throwsWith<FileError>([&] { (void)readNpyMatrixCached(dir.file("missing.npy")); }, {"missing.npy"}));
  std::ofstream(dir.file("bad.npy")) << "not an npy file";
  EXPECT_TRUE(test::throwsWith<FileError>([&] { (void)readNpyMatrixCached(dir.file("bad.npy")); }, {"bad.npy"}));
}

}  // namespace
}  // namespace tl
