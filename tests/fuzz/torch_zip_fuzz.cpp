// A whole torch.save checkpoint (io/checkpoint/torch_zip.h): the zip, its data.pkl and the storages the pickle
// points into, with views, strides and dtypes.
#include "fuzz_support.h"
#include "io/checkpoint/torch_zip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tl::fuzz::writeScratchFile(tl::fuzz::bytesOf(data, size), ".pt");
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::readTorchZip(path); });
  return 0;
}
