#pragma once
// A tensor as it lies in a checkpoint file: shape, element type and (strided) place in the file's bytes, already
// validated by its reader, decoded only when asked and straight into a buffer the caller owns (for a model, the
// parameter's own storage). Opening a checkpoint this way reads each element once, with no whole-file buffer
// and no per-tensor staging copy; HostTensor (tensor_map.h) is the decoded, owning form.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint/tensor_map.h"

namespace tl {

struct StoredTensor {
  std::vector<int64_t> shape;        // row-major (C order)
  std::vector<int64_t> stride;       // in elements, one per dimension; empty when contiguous row-major
  StoredType stored = StoredType::F32;  // the element type at `data`
  const unsigned char* data = nullptr;  // element 0 of the view
  std::shared_ptr<const void> owner;    // keeps `data` alive: the mapped file, or an in-memory tensor

  int64_t numel() const;
  // Writes numel() float32 values, row-major, to `out`.
  void decodeInto(float* out) const;
  HostTensor decode() const;

  // A tensor that is already in memory (a converted layout, a TorchScript archive read by LibTorch).
  static StoredTensor holding(HostTensor tensor);
};

using StoredTensorMap = std::map<std::string, StoredTensor>;

TensorMap decodeAll(const StoredTensorMap& tensors);
// Sum of numel() over the map: what progress over a decode counts.
int64_t totalElements(const StoredTensorMap& tensors);

}  // namespace tl
