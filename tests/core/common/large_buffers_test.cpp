// largeMatrix marks its buffer for transparent huge pages (the kernel's VmFlags "hg" on the mapping, read back
// from /proc/self/smaps), and leaves small buffers alone; keepFreedBuffers lets a freed buffer's pages serve the
// next one (page faults counted by getrusage).
#include "common/large_buffers.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>

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

// AddressSanitizer replaces malloc, so glibc's settings do not reach it (GCC and clang announce it differently).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

long minorPageFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Under the policy tlens and transportlens set at start, a freed 64 MiB buffer's pages serve the next buffer of
// that size, on this thread and on another one (the desktop app computes on a worker thread): writing it takes
// almost no page faults, where a fresh one takes at least one per 2 MiB page (512 per 2 MiB on ordinary pages).
// After releaseKeptBuffers the pages are the kernel's again and a new buffer faults.
TEST(LargeBuffers, FreedBuffersServeTheNextOneUntilReleased) {
  if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer's allocator ignores glibc's malloc settings";
  keepFreedBuffers(LargeBufferThreads::Any);
  auto faultsToWriteABuffer = [] {
    const long before = minorPageFaults();
    MatF m = largeMatrix<float>(4096, 4096);
    m.setZero();
    return minorPageFaults() - before;
  };
  const long fresh = faultsToWriteABuffer();
  const long reused = faultsToWriteABuffer();
  long reusedOnAnotherThread = -1;
  std::thread([&] { reusedOnAnotherThread = faultsToWriteABuffer(); }).join();
  releaseKeptBuffers();
  const long afterRelease = faultsToWriteABuffer();
  EXPECT_GE(fresh, 32);
  EXPECT_LE(reused, 4);
  EXPECT_LE(reusedOnAnotherThread, 4);
  EXPECT_GE(afterRelease, 32);
}

}  // namespace
}  // namespace tl
