#pragma once
// safetensors (https://huggingface.co/docs/safetensors): 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte span in the data section, then the data. Read and written by
// the project's own code (Debian has no library for it), validated strictly so a corrupt file gives one
// clear error instead of garbage weights.
#include <map>
#include <string>

#include "io/checkpoint/stored_tensor.h"
#include "io/checkpoint/tensor_map.h"

namespace tl {

struct SafetensorsFile {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;  // the header's "__metadata__" (string → string)
};

// The same file with its tensors left in place: the file is memory-mapped and validated (header, dtypes, shapes,
// spans inside the data section, no overlaps), and each tensor decodes when asked (stored_tensor.h).
struct MappedSafetensors {
  StoredTensorMap tensors;
  std::map<std::string, std::string> metadata;
};

// Both throw FileError naming the file and the offending tensor or field.
MappedSafetensors mapSafetensors(const std::string& path);
SafetensorsFile readSafetensors(const std::string& path);  // mapSafetensors, every tensor decoded

// Atomic write; `as` is F32, F16 or BF16 (values are rounded to nearest even).
void writeSafetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata, StoredType as = StoredType::F32);

}  // namespace tl
