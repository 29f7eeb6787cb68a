// The IDX reader of the Fashion-MNIST files (data/idx.h), plain and gzipped.
#include "data/idx.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tl::fuzz::writeScratchFile(tl::fuzz::bytesOf(data, size), ".idx");
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::readIdx(path); });
  return 0;
}
