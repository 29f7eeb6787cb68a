// The restricted unpickler of torch.save's data.pkl (io/checkpoint/torch_pickle.h): opcodes, memo, the globals it
// allows (and every global it must refuse, such as os.system), persistent ids of storages.
#include "fuzz_support.h"
#include "io/checkpoint/torch_pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = tl::fuzz::bytesOf(data, size);
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::loadTorchPickle(bytes, "fuzz/data.pkl"); });
  return 0;
}
