#pragma once
// The flags shared by the commands that open a ViT checkpoint (`extract`, `eval`): how to read the file
// (HF config beside a weights file, or a vit-pytorch side file) and which image to run it on.
#include <vector>

#include "arguments.h"
#include "vit/model_image.h"
#include "vit/vit_checkpoint.h"

namespace tl::cli {

// --config, --vit-pytorch.
std::vector<OptionSpec> checkpointOptions();
VitImportOptions importOptionsFrom(const CommandLine& cl);

// --image, --dataset, --split, --index.
std::vector<OptionSpec> imageOptions();
// --image FILE or --dataset fashion-mnist --index I [--split test|train]; InvalidArgument for neither or both.
ImageSource imageSourceFrom(const CommandLine& cl);

// --layers: comma-separated indices from 0, or all; InvalidArgument naming the option otherwise.
std::vector<int> parseLayers(const std::string& text, int numLayers);

// --split for commands that walk a dataset split (default test).
FashionMnistPart splitFrom(const CommandLine& cl);

}  // namespace tl::cli
