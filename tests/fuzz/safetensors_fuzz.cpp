// The safetensors reader (io/checkpoint/safetensors.h): header length, JSON header, dtypes, shapes, byte spans.
#include "fuzz_support.h"
#include "io/checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tl::fuzz::writeScratchFile(tl::fuzz::bytesOf(data, size), ".safetensors");
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::readSafetensors(path); });
  return 0;
}
