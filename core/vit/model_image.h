#pragma once
// The image a ViT checkpoint runs on, from wherever the user takes it: a PNG/JPEG file or a Fashion-MNIST
// image by split and index. Either way it becomes C×H×W pixels in [0, 1] at the checkpoint's input size
// (VitRunner normalises with the config's mean/std), plus what the views show beside it.
#include <optional>
#include <string>

#include "common/matrix.h"
#include "data/fashion_mnist.h"
#include "io/checkpoint/tensor_map.h"
#include "vit/vit_config.h"

namespace tl {

struct ModelImage {
  HostTensor pixels;         // C×H×W in [0, 1], C = config.numChannels, H = W = config.imageSize
  std::string description;   // "fashion-mnist test #17 (Ankle boot)" or the file name
  std::optional<int> label;  // the true class when the image comes from a labelled dataset
};

// Text form shared by the CLI, sessions and the GUI: "fashion-mnist:test:17" / "fashion-mnist:train:3",
// or a path to a PNG/JPEG file.
struct ImageSource {
  std::string file;  // set for an image file
  FashionMnistPart part = FashionMnistPart::Test;
  int index = 0;

  static ImageSource parse(const std::string& text);  // InvalidArgument for a malformed dataset reference
  std::string toString() const;
  bool isFile() const { return !file.empty(); }
};

// Greyscale datasets feed RGB models by repeating the channel (and colour files are converted to grey for
// grey models), then bilinear resizing to the config's image size.
ModelImage loadModelImage(const ImageSource& source, const VitConfig& config);
ModelImage modelImageFromGrey(const uint8_t* grey28, const VitConfig& config, const std::string& description,
                              std::optional<int> label);

// The image the model saw, averaged over its channels: H × W in [0, 1].
MatD greyImage(const ModelImage& image);

}  // namespace tl
