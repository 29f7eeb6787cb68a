// The run marker tells a run that ended without its clean exit from one still running and from a clean exit.
#include "io/run_marker.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

TEST(RunMarker, FirstRunHoldsItAndACleanExitRemovesIt) {
  test::TempDir dir;
  const std::string path = dir.file("running");
  {
    RunMarker marker(path);
    EXPECT_TRUE(marker.held());
    EXPECT_FALSE(marker.previousRunEndedUncleanly());
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  RunMarker next(path);
  EXPECT_TRUE(next.held());
  EXPECT_FALSE(next.previousRunEndedUncleanly());
}

TEST(RunMarker, ASecondProcessWhileTheFirstRunsDoesNotHoldIt) {
  test::TempDir dir;
  const std::string path = dir.file("running");
  RunMarker first(path);
  std::optional<RunMarker> second(std::in_place, path);
  EXPECT_FALSE(second->held());
  EXPECT_FALSE(second->previousRunEndedUncleanly());
  second.reset();
  EXPECT_TRUE(std::filesystem::exists(path)) << "only the holder removes the marker";
}

TEST(RunMarker, AProcessThatDiesWithoutItsCleanExitLeavesAStaleMarker) {
  test::TempDir dir;
  const std::string path = dir.file("running");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto* marker = new RunMarker(path);  // never destroyed: _exit skips the clean exit, as SIGKILL would
    ::_exit(marker->held() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(std::filesystem::exists(path));
  RunMarker next(path);
  EXPECT_TRUE(next.held()) << "the kernel released the dead process's lock";
  EXPECT_TRUE(next.previousRunEndedUncleanly());
}

TEST(RunMarker, MissingFolderThrowsFileError) {
  test::TempDir dir;
  EXPECT_THROW(RunMarker((dir.path() / "missing" / "running").string()), FileError);
}

}  // namespace
}  // namespace tl
