// largeMatrix marks its buffer for transparent huge pages (the kernel's VmFlags "hg" on the mapping, read back
// from /proc/self/smaps), and leaves small buffers alone.
#include "common/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>

namespace tl {
namespace {

// The VmFlags line of the mapping that contains `address`, or "" when none is found.
std::string vmFlagsAt(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') inside = begin <= a && a < end;
    else if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool hasHugePageFlag(const std::string& vmFlags) { return (vmFlags + " ").find(" hg ") != std::string::npos; }

TEST(HugePages, ModeIsOneOfTheKernelsWords) {
  const std::string mode = transparentHugePageMode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unavailable") << mode;
}

TEST(HugePages, LargeMatrixIsAdvisedAndSmallOneIsNot) {
  const std::string mode = transparentHugePageMode();
  if (mode != "always" && mode != "madvise") GTEST_SKIP() << "transparent huge pages are " << mode;
  const MatF large = largeMatrix<float>(2048, 2048);  // 16 MiB
  const std::string flags = vmFlagsAt(large.data() + large.size() / 2);
  ASSERT_FALSE(flags.empty());
  EXPECT_TRUE(hasHugePageFlag(flags)) << flags;

  const MatF small = largeMatrix<float>(64, 64);  // 16 KiB, below kHugePageAdviceBytes: on the ordinary heap
  EXPECT_FALSE(hasHugePageFlag(vmFlagsAt(small.data()))) << vmFlagsAt(small.data());
}

}  // namespace
}  // namespace tl
