// The .npy reader (io/npy.h) as `--q/--k/--mask` and the files: source use it: arrays, matrices and masks.
#include "fuzz_support.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tl::fuzz::writeScratchFile(tl::fuzz::bytesOf(data, size), ".npy");
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::readNpyMatrix<float>(path); });
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::readNpyMask(path); });
  return 0;
}
