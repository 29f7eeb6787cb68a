#pragma once
// Element bytes as checkpoint files store them (little-endian) ↔ the float32 values of a HostTensor.
#include <cstddef>
#include <string>

#include "io/checkpoint/tensor_map.h"

namespace tl {

size_t elementSize(StoredType t);

// One element at `bytes` (unaligned access is fine). Integers convert to the nearest float; BOOL to 0 or 1.
float decodeElement(StoredType t, const unsigned char* bytes);

// `count` consecutive elements.
void decodeElements(StoredType t, const unsigned char* bytes, size_t count, float* out);

// Appends `count` values encoded as F32, F16 or BF16 (rounded to nearest even); other types throw
// InvalidArgument, since the project writes only floating-point weights.
void encodeElements(StoredType t, const float* values, size_t count, std::string& out);

}  // namespace tl
