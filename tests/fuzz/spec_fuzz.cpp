// The one-line specs users type (CLI --op/--source, the GUI's fields): operator specs through the registry, and
// source specs (synthetic, files, model). The first byte picks the parser so one corpus covers both.
#include "fuzz_support.h"
#include "ops/registry.h"
#include "session/source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = tl::fuzz::bytesOf(data + 1, size - 1);
  if (data[0] % 2 == 0)
    tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::OperatorRegistry::builtin().parse(text); });
  else
    tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::SourceSpec::parse(text).toString(); });
  return 0;
}
