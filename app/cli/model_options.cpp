#include "model_options.h"

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

}  // namespace tl::cli
