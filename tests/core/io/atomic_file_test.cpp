// Atomic writes: a failed write never leaves a half-written file and never destroys the previous one.
#include "io/atomic_file.h"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/resource.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

TEST(AtomicFile, WriteCreatesFileWithExactBytes) {
  test::TempDir dir;
  std::string bytes = "hello\n";
  bytes += std::string("\0\x01\xff binary", 10);
  writeFileAtomically(dir.file("a.bin"), bytes);
  EXPECT_EQ(test::readBytes(dir.file("a.bin")), bytes);
  EXPECT_EQ(readFile(dir.file("a.bin")), bytes);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"a.bin"}) << "no temporary files left behind";
  writeFileAtomically(dir.file("empty"), "");
  EXPECT_EQ(readFile(dir.file("empty")), "");
}

TEST(AtomicFile, ReplacesExistingFileOnSuccess) {
  test::TempDir dir;
  test::writeBytes(dir.file("s.json"), "old content that is longer than the new one");
  writeFileAtomically(dir.file("s.json"), "new");
  EXPECT_EQ(readFile(dir.file("s.json")), "new");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"s.json"});
}

TEST(AtomicFile, MissingDirectoryThrowsAndLeavesNothing) {
  test::TempDir dir;
  const std::string path = (dir.path() / "missing" / "out.txt").string();
  EXPECT_TRUE(throwsWith<FileError>([&] { writeFileAtomically(path, "data"); }, {"out.txt"}));
  EXPECT_TRUE(dir.list().empty());
}

TEST(AtomicFile, TargetThatIsADirectoryThrowsAndLeavesItAlone) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "taken" / "inside");
  EXPECT_TRUE(throwsWith<FileError>([&] { writeFileAtomically(dir.file("taken"), "data"); }, {"taken"}));
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "taken" / "inside"));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"taken"}) << "no temporary files left behind";
}

// A write that fails half-way (here: the file-size limit, EFBIG) must throw and keep the old file.
// RLIMIT_FSIZE works for root too, unlike permission bits.
TEST(AtomicFile, FailedWriteKeepsPreviousVersion) {
  test::TempDir dir;
  const std::string path = dir.file("keep.txt");
  const std::string original = "the version the user saved";
  test::writeBytes(path, original);

  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = old;
  limited.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  bool threw = false;
  std::string message;
  try {
    writeFileAtomically(path, std::string(1 << 20, 'x'));  // 1 MiB > 4 KiB limit
  } catch (const FileError& e) {
    threw = true;
    message = e.what();
  } catch (...) {
    message = "wrong exception type";
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldHandler);

  EXPECT_TRUE(threw) << message;
  EXPECT_EQ(test::readBytes(path), original);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"keep.txt"}) << "no temporary files left behind";
}

TEST(AtomicFile, ReadFileMissingNamesThePath) {
  test::TempDir dir;
  const std::string path = dir.file("nothing_here.txt");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readFile(path); }, {path}));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readFile(dir.path().string()); })) << "a directory is not a file";
}

TEST(AtomicFile, EnsureDirectoryCreatesParents) {
  test::TempDir dir;
  const auto nested = dir.path() / "a" / "b" / "c";
  ensureDirectory(nested.string());
  EXPECT_TRUE(std::filesystem::is_directory(nested));
  EXPECT_NO_THROW(ensureDirectory(nested.string())) << "existing folder is fine";
  test::writeBytes(dir.file("plain"), "x");
  EXPECT_TRUE(throwsWith<FileError>([&] { ensureDirectory(dir.file("plain")); }, {"plain"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { ensureDirectory((dir.path() / "plain" / "sub").string()); }));
}

}  // namespace
}  // namespace tl
