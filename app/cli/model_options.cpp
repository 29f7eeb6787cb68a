#include "model_options.h"

#include <sstream>

#include "common/errors.h"

namespace tl::cli {

std::vector<OptionSpec> checkpointOptions() {
  return {{"config", "FILE", "config.json for a weights file in Hugging Face names (default: the one beside it)"},
          {"vit-pytorch", "FILE",
           "JSON side file with the ViT(...) arguments of a vit-pytorch state dict that the shapes do not tell "
           "(heads, dim_head, patch_size, image_size, attention, ...)"}};
}

VitImportOptions importOptionsFrom(const CommandLine& cl) {
  VitImportOptions options;
  options.config = cl.get("config").value_or("");
  options.sideFile = cl.get("vit-pytorch").value_or("");
  return options;
}

std::vector<OptionSpec> imageOptions() {
  return {{"image", "FILE", "a PNG or JPEG image (resized to the checkpoint's input size)"},
          {"dataset", "NAME", "take the image from a dataset instead: fashion-mnist"},
          {"split", "test|train", "dataset split (default test)"},
          {"index", "I", "image index in the split"}};
}

FashionMnistPart splitFrom(const CommandLine& cl) {
  const std::string split = cl.get("split").value_or("test");
  if (split == "test") return FashionMnistPart::Test;
  if (split == "train") return FashionMnistPart::Train;
  throw InvalidArgument("--split: '" + split + "' is not test or train");
}

ImageSource imageSourceFrom(const CommandLine& cl) {
  if (cl.has("image") == cl.has("dataset"))
    throw InvalidArgument("give either --image FILE or --dataset fashion-mnist --index I");
  if (cl.has("image")) {
    ImageSource source;
    source.file = cl.required("image");
    return source;
  }
  if (cl.required("dataset") != "fashion-mnist")
    throw InvalidArgument("--dataset: '" + cl.required("dataset") + "' is not known; the bundled dataset is fashion-mnist");
  return ImageSource::parse(std::string("fashion-mnist:") + (splitFrom(cl) == FashionMnistPart::Train ? "train" : "test") +
                            ":" + cl.required("index"));
}

std::vector<int> parseLayers(const std::string& text, int numLayers) {
  std::vector<int> layers;
  if (text == "all") {
    for (int l = 0; l < numLayers; ++l) layers.push_back(l);
    return layers;
  }
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(item) >= numLayers)
      throw InvalidArgument("--layers: '" + item + "' is not a layer of this model; expected indices 0.." +
                            std::to_string(numLayers - 1) + " or all");
    layers.push_back(std::stoi(item));
  }
  if (layers.empty()) throw InvalidArgument("--layers: give at least one layer index, or all");
  return layers;
}

}  // namespace tl::cli
