// The zip container of torch.save files (io/checkpoint/zip_archive.h): central directory, ZIP64 records, local
// headers, stored and deflated entries with their CRCs.
#include "fuzz_support.h"
#include "io/checkpoint/zip_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tl::fuzz::rejectOnlyWithProjectErrors([&] {
    tl::ZipArchive zip("fuzz.pt", tl::fuzz::bytesOf(data, size));
    for (const tl::ZipEntry& entry : zip.entries())
      tl::fuzz::rejectOnlyWithProjectErrors([&] { zip.contents(entry); });
  });
  return 0;
}
