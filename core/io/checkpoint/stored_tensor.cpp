#include "io/checkpoint/stored_tensor.h"

#include "io/checkpoint/element_codec.h"

namespace tl {

int64_t StoredTensor::numel() const {
  int64_t n = 1;  // a 0-d tensor (empty shape) holds one value
  for (int64_t d : shape) n *= d;
  return n;
}

void StoredTensor::decodeInto(float* out) const {
  const int64_t count = numel();
  if (count == 0) return;
  if (stride.empty()) {
    decodeElements(stored, data, size_t(count), out);
    return;
  }
  // Row-major walk over the view: an odometer over the indices, moving the storage index by the strides.
  const size_t rank = shape.size(), itemSize = elementSize(stored);
  std::vector<int64_t> index(rank, 0);
  int64_t at = 0;
  for (int64_t n = 0; n < count; ++n) {
    out[n] = decodeElement(stored, data + at * int64_t(itemSize));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) {
        at += stride[d];
        break;
      }
      at -= (shape[d] - 1) * stride[d];
      index[d] = 0;
    }
  }
}

HostTensor StoredTensor::decode() const {
  HostTensor t;
  t.shape = shape;
  t.stored = stored;
  t.values.resize(size_t(numel()));
  decodeInto(t.values.data());
  return t;
}

StoredTensor StoredTensor::holding(HostTensor tensor) {
  auto held = std::make_shared<const HostTensor>(std::move(tensor));
  StoredTensor t;
  t.shape = held->shape;
  t.stored = StoredType::F32;  // HostTensor values are float32 whatever the file had
  t.data = reinterpret_cast<const unsigned char*>(held->values.data());
  t.owner = std::move(held);
  return t;
}

TensorMap decodeAll(const StoredTensorMap& tensors) {
  TensorMap out;
  for (const auto& [name, t] : tensors) out.emplace(name, t.decode());
  return out;
}

int64_t totalElements(const StoredTensorMap& tensors) {
  int64_t total = 0;
  for (const auto& [name, t] : tensors) total += t.numel();
  return total;
}

}  // namespace tl
