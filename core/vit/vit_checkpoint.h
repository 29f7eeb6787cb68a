#pragma once
// A ViT checkpoint is its config plus its named tensors in Hugging Face ViTForImageClassification names.
// The project writes a folder with config.json and model.safetensors (loadable by `transformers` as long as
// the normaliser has no learned tensors and heads·head_dim = hidden_size), and reads that folder, single
// weight files in HF names, and lucidrains/vit-pytorch state dicts (converted by weight_names.h).
// No LibTorch here (TorchScript archives are read through an installed reader).
#include <string>

#include "io/checkpoint/stored_tensor.h"
#include "io/checkpoint/tensor_map.h"
#include "vit/vit_config.h"
#include "vit/weight_names.h"

namespace tl {

struct VitCheckpoint {
  VitConfig config;
  TensorMap tensors;  // HF names; checked against config by checkVitTensors
};

struct VitImportOptions {
  std::string config;            // config.json for a weights file in HF names (default: the one beside it)
  std::string sideFile;          // vit-pytorch: JSON with the ViT(...) arguments the shapes do not tell
  VitPytorchOptions vitPytorch;  // the same arguments given directly; these win over the side file
};

// `path` is either
//  - a folder with config.json and model.safetensors (or pytorch_model.bin); when config.json has no
//    transportlens image_mean/image_std, a preprocessor_config.json beside it supplies them (as HF does);
//  - a weights file: .safetensors, a torch.save pickle (.pt/.pth/.bin: state_dict or dict of tensors) or a
//    TorchScript archive, named in HF or in vit-pytorch layout (told apart by the tensor names).
// A "module." prefix on every name (nn.DataParallel) is dropped. Throws FileError naming the file and the
// missing or offending tensor or field.
VitCheckpoint readVitCheckpoint(const std::string& path, const VitImportOptions& options = {});

// The same checkpoint with its tensors left in the memory-mapped weights file, validated against the config
// and decoded only when a model copies them into its parameters (VitModelImpl::load): opening a ViT-B costs
// one read of its bytes. Converted layouts (vit-pytorch) and TorchScript archives are held in memory.
// readVitCheckpoint is this with every tensor decoded.
struct VitCheckpointFile {
  VitConfig config;
  StoredTensorMap tensors;  // HF names; checked against config by checkVitTensors
};
VitCheckpointFile openVitCheckpoint(const std::string& path, const VitImportOptions& options = {});

// TorchScript archives can only be loaded by LibTorch, which this layer does not link. The model layer installs
// its reader (model/torchscript.h) before it reads checkpoints; without one, such a file gets a FileError
// saying that this build cannot read it.
using TorchScriptReader = TensorMap (*)(const std::string& path);
void installTorchScriptReader(TorchScriptReader reader);

// Writes dir/config.json and dir/model.safetensors, each atomically, creating dir when needed.
void writeVitCheckpoint(const std::string& dir, const VitCheckpoint& checkpoint);

}  // namespace tl
