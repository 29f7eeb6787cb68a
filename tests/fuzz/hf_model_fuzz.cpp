// What turns a model folder into a ViT (vit/vit_config.h, vit/weight_names.h): the Hugging Face config.json, the
// vit-pytorch side file, and the mapping of weight names and shapes onto the model. The input is the JSON text, a
// NUL byte, then one tensor per line ("name dim0 dim1 ..."); tensors are zeros, since only names and shapes matter.
#include <algorithm>
#include <sstream>

#include "fuzz_support.h"
#include "vit/vit_checkpoint.h"
#include "vit/vit_config.h"
#include "vit/weight_names.h"

namespace {

// Bounded so that a line asking for a huge tensor is skipped instead of exhausting the fuzzer's memory: the
// readers that produce tensors bound them by the file's bytes, so the mapping never sees more than that.
constexpr int64_t kMaxElements = int64_t(1) << 16;
constexpr size_t kMaxTensors = 256;

tl::TensorMap tensorsFrom(const std::string& listing) {
  tl::TensorMap tensors;
  std::istringstream lines(listing);
  std::string line;
  while (std::getline(lines, line) && tensors.size() < kMaxTensors) {
    std::istringstream fields(line);
    tl::HostTensor tensor;
    std::string name;
    fields >> name;
    int64_t dim = 0, numel = 1;
    while (fields >> dim && dim >= 0 && dim <= kMaxElements / numel) {
      tensor.shape.push_back(dim);
      numel *= std::max<int64_t>(dim, 1);
    }
    if (name.empty() || !fields.eof()) continue;
    tensor.values.assign(size_t(tensor.numel()), 0.0f);
    tensors[name] = std::move(tensor);
  }
  return tensors;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = tl::fuzz::bytesOf(data, size);
  const size_t split = input.find('\0');
  const std::string json = input.substr(0, split);
  const tl::TensorMap tensors = tensorsFrom(split == std::string::npos ? "" : input.substr(split + 1));

  tl::fuzz::rejectOnlyWithProjectErrors([&] {
    const tl::VitConfig config = tl::parseVitConfig(json, "fuzz/config.json");
    tl::checkVitTensors(tensors, config, "fuzz/model.safetensors");
  });
  tl::fuzz::rejectOnlyWithProjectErrors([&] {
    const tl::VitPytorchOptions options = tl::readVitPytorchSideFile(tl::fuzz::writeScratchFile(json, ".json"));
    if (tl::isVitPytorchLayout(tensors)) tl::convertVitPytorch(tensors, options, "fuzz/model.pt");
  });
  return 0;
}
