#pragma once
// Checkpoints written by Python's torch.save (PyTorch ≥ 1.6 zip format): `<archive>/data.pkl` holds the
// pickled object, `<archive>/data/<key>` the raw little-endian storages. Read without LibTorch, because
// LibTorch cannot load a pickled OrderedDict (the usual `torch.save(model.state_dict())`).
#include <string>
#include <vector>

#include "io/checkpoint/stored_tensor.h"
#include "io/checkpoint/tensor_map.h"

namespace tl {

// Returns every tensor in the file's top-level dict. Nested dicts, lists and tuples that contain tensors
// flatten to dotted names ({'model': {'fc.weight': t}} → "model.fc.weight", lists by index); other values
// (epoch numbers, strings, hyper-parameters) are skipped, and their dotted names are appended to
// `skippedLeaves` when it is given. Strided views are gathered into row-major values.
// Throws FileError naming the file, and the tensor, entry, opcode or global at fault.
TensorMap readTorchZip(const std::string& path, std::vector<std::string>* skippedLeaves = nullptr);

// The same tensors left in the memory-mapped file (validated: storages present, CRCs, views inside their
// storages), each decoded when asked (stored_tensor.h). readTorchZip is this with every tensor decoded.
StoredTensorMap mapTorchZip(const std::string& path, std::vector<std::string>* skippedLeaves = nullptr);

}  // namespace tl
