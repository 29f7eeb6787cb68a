#include "data/image_file.h"

#include "common/errors.h"
#include "data/image_codecs.h"
#include "io/atomic_file.h"

namespace tl {
namespace {

bool startsWith(const std::string& bytes, const char* signature, size_t length) {
  return bytes.size() >= length && bytes.compare(0, length, signature, length) == 0;
}

// ITU-R 601-2 luma, as PIL's convert("L") (without its rounding to 8 bits).
Image toGrey(const Image& rgb) {
  Image grey{rgb.height, rgb.width, 1, std::vector<float>(size_t(rgb.height) * size_t(rgb.width))};
  for (size_t i = 0; i < grey.pixels.size(); ++i) {
    const float* p = &rgb.pixels[3 * i];
    grey.pixels[i] = 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
  }
  return grey;
}

Image toRgb(const Image& grey) {
  Image rgb{grey.height, grey.width, 3, std::vector<float>(grey.pixels.size() * 3)};
  for (size_t i = 0; i < grey.pixels.size(); ++i)
    rgb.pixels[3 * i] = rgb.pixels[3 * i + 1] = rgb.pixels[3 * i + 2] = grey.pixels[i];
  return rgb;
}

}  // namespace

Image decodeImage(const std::string& bytes, const std::string& name, ImageColor color) {
  Image image;
  if (startsWith(bytes, "\x89PNG\r\n\x1a\n", 8))
    image = decodePng(bytes, name);
  else if (startsWith(bytes, "\xff\xd8\xff", 3))
    image = decodeJpeg(bytes, name);
  else
    throw FileError(name + ": not a PNG or JPEG image (unrecognised signature)");
  if (color == ImageColor::Grey && image.channels == 3) return toGrey(image);
  if (color == ImageColor::Rgb && image.channels == 1) return toRgb(image);
  return image;
}

Image readImageFile(const std::string& path, ImageColor color) { return decodeImage(readFile(path), path, color); }

}  // namespace tl
