#include "io/checkpoint/element_codec.h"

#include <cstdint>
#include <cstring>

#include "common/errors.h"
#include "io/checkpoint/half_float.h"

namespace tl {
namespace {

// Files are little-endian and so is every platform the project builds on (x86-64, aarch64).
template <class T>
T load(const unsigned char* bytes) {
  T v;
  std::memcpy(&v, bytes, sizeof v);
  return v;
}

}  // namespace

size_t elementSize(StoredType t) {
  switch (t) {
    case StoredType::F64:
    case StoredType::I64:
      return 8;
    case StoredType::F32:
    case StoredType::I32:
      return 4;
    case StoredType::F16:
    case StoredType::BF16:
      return 2;
    case StoredType::U8:
    case StoredType::Bool:
      return 1;
  }
  return 0;
}

float decodeElement(StoredType t, const unsigned char* bytes) {
  switch (t) {
    case StoredType::F32:
      return load<float>(bytes);
    case StoredType::F16:
      return halfToFloat(load<uint16_t>(bytes));
    case StoredType::BF16:
      return bfloat16ToFloat(load<uint16_t>(bytes));
    case StoredType::F64:
      return float(load<double>(bytes));
    case StoredType::I64:
      return float(load<int64_t>(bytes));
    case StoredType::I32:
      return float(load<int32_t>(bytes));
    case StoredType::U8:
      return float(bytes[0]);
    case StoredType::Bool:
      return bytes[0] != 0 ? 1.0f : 0.0f;
  }
  return 0.0f;
}

void decodeElements(StoredType t, const unsigned char* bytes, size_t count, float* out) {
  if (t == StoredType::F32) {
    if (count > 0) std::memcpy(out, bytes, count * sizeof(float));  // an empty tensor may have no buffer at all
    return;
  }
  const size_t size = elementSize(t);
  for (size_t i = 0; i < count; ++i) out[i] = decodeElement(t, bytes + i * size);
}

void encodeElements(StoredType t, const float* values, size_t count, std::string& out) {
  const size_t start = out.size();
  switch (t) {
    case StoredType::F32:
      out.resize(start + count * 4);
      if (count > 0) std::memcpy(&out[start], values, count * 4);  // an empty tensor may have no buffer at all
      return;
    case StoredType::F16:
    case StoredType::BF16: {
      out.resize(start + count * 2);
      for (size_t i = 0; i < count; ++i) {
        const uint16_t h = t == StoredType::F16 ? floatToHalf(values[i]) : floatToBfloat16(values[i]);
        std::memcpy(&out[start + 2 * i], &h, 2);
      }
      return;
    }
    default:
      throw InvalidArgument(std::string("cannot write tensors as ") + storedTypeName(t) +
                            ": only F32, F16 and BF16 are written");
  }
}

}  // namespace tl
