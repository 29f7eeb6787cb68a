#include "model/torchscript.h"

#include <torch/script.h>

#include "common/errors.h"
#include "vit/vit_checkpoint.h"

namespace tl {
namespace {

StoredType storedTypeOf(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half: return StoredType::F16;
    case c10::ScalarType::BFloat16: return StoredType::BF16;
    case c10::ScalarType::Double: return StoredType::F64;
    default: return StoredType::F32;
  }
}

}  // namespace

TensorMap readTorchScriptParameters(const std::string& path) {
  torch::jit::script::Module module;
  try {
    module = torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw FileError(path + ": not a TorchScript archive LibTorch can load (" + e.what_without_backtrace() + ")");
  }
  TensorMap out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    if (!p.value.is_floating_point())
      throw FileError(path + ": parameter '" + p.name + "' is not a floating-point tensor");
    const torch::Tensor values = p.value.detach().to(torch::kFloat32).contiguous();
    HostTensor t;
    t.shape.assign(values.sizes().begin(), values.sizes().end());
    t.values.assign(values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
    t.stored = storedTypeOf(p.value.scalar_type());
    out[p.name] = std::move(t);
  }
  return out;
}

void useLibTorchForTorchScript() { installTorchScriptReader(&readTorchScriptParameters); }

}  // namespace tl
