#pragma once
// PNG and JPEG images decoded to float32 in [0, 1] (8-bit samples / 255, 16-bit / 65535),
// height × width × channels (row-major, channels last), greyscale (1 channel) or RGB (3). Colour handling
// follows PIL's Image.convert, so a model sees what a Python user would feed it: alpha and palette
// transparency are dropped, RGB → grey uses the ITU-R 601-2 luma weights 0.299 R + 0.587 G + 0.114 B
// (unrounded), grey → RGB repeats the channel. Gamma and colour-profile chunks are ignored, as PIL does.
#include <cstdint>
#include <string>
#include <vector>

namespace tl {

struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;           // 1 (grey) or 3 (RGB)
  std::vector<float> pixels;  // height × width × channels, in [0, 1]

  float at(int y, int x, int c) const {
    return pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
};

enum class ImageColor { Grey, Rgb };

// Decodes by content (PNG or JPEG signature), not by file name. Throws FileError naming the file for
// missing, corrupt, truncated or unsupported images (e.g. CMYK JPEG) and for images over 64 megapixels.
Image readImageFile(const std::string& path, ImageColor color);

// The same for bytes already in memory; `name` identifies them in errors.
Image decodeImage(const std::string& bytes, const std::string& name, ImageColor color);

}  // namespace tl
