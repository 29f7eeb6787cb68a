#include "io/checkpoint/tensor_map.h"

namespace tl {

int64_t HostTensor::numel() const {
  int64_t n = 1;  // a 0-d tensor (empty shape) holds one value
  for (int64_t d : shape) n *= d;
  return n;
}

// The safetensors dtype names, so messages and headers use one vocabulary.
const char* storedTypeName(StoredType t) {
  switch (t) {
    case StoredType::F32:
      return "F32";
    case StoredType::F16:
      return "F16";
    case StoredType::BF16:
      return "BF16";
    case StoredType::F64:
      return "F64";
    case StoredType::I64:
      return "I64";
    case StoredType::I32:
      return "I32";
    case StoredType::U8:
      return "U8";
    case StoredType::Bool:
      return "BOOL";
  }
  return "?";
}

}  // namespace tl
