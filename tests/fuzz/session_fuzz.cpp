// Session files (session/session.h) as File › Open and `--session` load them: JSON, then every field, the
// operators through the registry and the source with its paths.
#include "fuzz_support.h"
#include "session/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tl::fuzz::writeScratchFile(tl::fuzz::bytesOf(data, size), ".json");
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::Session::load(path); });
  return 0;
}
