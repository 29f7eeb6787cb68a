#pragma once
// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 28×28 greyscale clothing images in 10 classes, 60000 for
// training and 10000 for testing, read from the gzipped IDX files Debian's dataset-fashion-mnist installs.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tl {

enum class FashionMnistPart { Train, Test };

struct FashionMnistSplit {
  static constexpr int kRows = 28;
  static constexpr int kCols = 28;
  int count = 0;
  std::vector<uint8_t> images;  // count × 28 × 28, row-major; 0 is the (black) background
  std::vector<uint8_t> labels;  // count class indices in 0..9, see fashionMnistClassNames()
};

// $TL_FASHION_MNIST_DIR when set (tests point it at small generated files), else the Debian folder.
std::string fashionMnistDirectory();

// Throws FileError when the files are missing (saying how to install them) or inconsistent.
FashionMnistSplit loadFashionMnist(FashionMnistPart part);

const std::array<std::string, 10>& fashionMnistClassNames();

}  // namespace tl
