#pragma once
// Named tensors as checkpoint readers hand them over: plain std types, no LibTorch, so file formats
// (safetensors, PyTorch zip pickles, IDX) are parsed and tested without torch, and model code converts
// them to torch tensors in its own translation units.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tl {

// The element type a tensor had in its file. Values are always decoded to float32 in memory (the models
// TransportLens runs are float32); the stored type is kept so writers can round-trip it.
enum class StoredType { F32, F16, BF16, F64, I64, I32, U8, Bool };

struct HostTensor {
  std::vector<int64_t> shape;  // row-major (C order)
  std::vector<float> values;   // product(shape) elements
  StoredType stored = StoredType::F32;

  int64_t numel() const;
};

// Ordered by name, as safetensors headers and state dicts are compared by name.
using TensorMap = std::map<std::string, HostTensor>;

const char* storedTypeName(StoredType t);

}  // namespace tl
