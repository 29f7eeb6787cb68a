#include "data/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>

#include "common/errors.h"
#include "data/idx.h"

namespace tl {
namespace {

constexpr char kDebianDirectory[] = "/usr/share/datasets/fashion-mnist";
constexpr int kClassCount = 10;

std::string requireFile(const std::string& directory, const std::string& name) {
  const std::string path = (std::filesystem::path(directory) / name).string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw FileError("Fashion-MNIST file " + path +
                    " is missing: install dataset-fashion-mnist (scripts/setup does), or set TL_FASHION_MNIST_DIR "
                    "to a folder holding the IDX files");
  return path;
}

}  // namespace

std::string fashionMnistDirectory() {
  const char* overridden = std::getenv("TL_FASHION_MNIST_DIR");
  return overridden && *overridden ? overridden : kDebianDirectory;
}

FashionMnistSplit loadFashionMnist(FashionMnistPart part) {
  const std::string directory = fashionMnistDirectory();
  const std::string prefix = part == FashionMnistPart::Train ? "train" : "t10k";
  const std::string imagePath = requireFile(directory, prefix + "-images-idx3-ubyte.gz");
  const std::string labelPath = requireFile(directory, prefix + "-labels-idx1-ubyte.gz");

  IdxArray images = readIdx(imagePath);
  IdxArray labels = readIdx(labelPath);
  const auto& s = images.shape;
  if (s.size() != 3 || s[1] != FashionMnistSplit::kRows || s[2] != FashionMnistSplit::kCols)
    throw FileError(imagePath + ": images are not N×28×28");
  if (labels.shape.size() != 1) throw FileError(labelPath + ": labels are not a 1-D array");
  if (labels.shape[0] != s[0])
    throw FileError(labelPath + ": holds " + std::to_string(labels.values.size()) + " labels for " +
                    std::to_string(s[0]) + " images in " + imagePath);
  for (size_t i = 0; i < labels.values.size(); ++i) {
    if (labels.values[i] >= kClassCount)
      throw FileError(labelPath + ": label " + std::to_string(i) + " is " + std::to_string(labels.values[i]) +
                      ", not a class in 0..9");
  }
  FashionMnistSplit split;
  split.count = int(s[0]);
  split.images = std::move(images.values);
  split.labels = std::move(labels.values);
  return split;
}

const std::array<std::string, 10>& fashionMnistClassNames() {
  static const std::array<std::string, 10> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace tl
