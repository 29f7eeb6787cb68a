// FileBytes: a file mapped read-only is exactly its bytes, an empty file maps to none, and what cannot be read is a
// FileError worded as readFile words it.
#include "io/file_bytes.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

TEST(FileBytes, MapsTheWholeFile) {
  const test::TempDir dir;
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7919 % 251);
  test::writeBytes(dir.file("data.bin"), bytes);
  const auto mapped = FileBytes::map(dir.file("data.bin"));
  EXPECT_EQ(mapped->size(), bytes.size());
  EXPECT_EQ(mapped->view(), bytes);
  EXPECT_EQ(FileBytes::map(dir.file("data.bin"))->view(), readFile(dir.file("data.bin")));
}

TEST(FileBytes, EmptyFilesAndHeldBytes) {
  const test::TempDir dir;
  test::writeBytes(dir.file("empty"), "");
  EXPECT_EQ(FileBytes::map(dir.file("empty"))->size(), 0u);
  EXPECT_EQ(FileBytes::hold("abc")->view(), "abc");
}

TEST(FileBytes, UnreadablePathsAreFileErrors) {
  const test::TempDir dir;
  EXPECT_TRUE(throwsWith<FileError>([&] { FileBytes::map(dir.file("missing")); }, {"cannot read", "missing", "no such file"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { FileBytes::map(dir.path().string()); }, {"cannot read", "it is a directory"}));
}

}  // namespace
}  // namespace tl
