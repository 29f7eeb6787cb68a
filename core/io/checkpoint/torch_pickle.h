#pragma once
// The subset of Python's pickle (protocols 2–4) that torch.save writes for dicts of tensors: plain Python
// values, dicts and OrderedDicts, lists, tuples, and tensors rebuilt by torch._utils._rebuild_tensor_v2
// from storages named by persistent ids. Anything else (other classes, other opcodes) is refused with an
// error naming the opcode or the global, since running arbitrary pickled code is exactly what we must not do.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/checkpoint/tensor_map.h"

namespace tl {

// A storage as the persistent id ('storage', torch.<Type>Storage, key, location, numel) names it; its
// bytes are the archive entry data/<key>.
struct StorageRef {
  std::string key;
  StoredType type = StoredType::F32;
  int64_t numel = 0;
};

// A strided view into a storage, in elements.
struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
};

struct PickleValue {
  enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;  // String, or Global as "module.name"
  // Containers are shared, not copied: the pickle memo refers to the same list or dict that later opcodes
  // fill in.
  std::shared_ptr<std::vector<PickleValue>> items;                            // Tuple, List
  std::shared_ptr<std::vector<std::pair<PickleValue, PickleValue>>> entries;  // Dict, in insertion order
  std::shared_ptr<StorageRef> storage;                                        // Storage
  std::shared_ptr<TensorRef> tensor;                                          // Tensor
};

const char* pickleKindName(PickleValue::Kind kind);

// Runs the pickle in `bytes`; `where` (e.g. "model.pt: archive/data.pkl") prefixes every error message.
// Throws FileError naming the opcode, global or byte offset that could not be handled.
PickleValue loadTorchPickle(std::string_view bytes, const std::string& where);

}  // namespace tl
