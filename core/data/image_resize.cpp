#include "data/image_resize.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.h"

namespace tl {
namespace {

// One output coordinate's two source neighbours and the weight of the second
// (ATen's area_pixel_compute_source_index, align_corners=False: negative positions clamp to 0).
struct Tap {
  int lo = 0, hi = 0;
  float weight = 0;
};

std::vector<Tap> taps(int in, int out) {
  std::vector<Tap> result(static_cast<size_t>(out));
  const double scale = double(in) / double(out);
  for (int i = 0; i < out; ++i) {
    const double source = std::max(scale * (i + 0.5) - 0.5, 0.0);
    Tap& t = result[size_t(i)];
    t.lo = std::min(int(source), in - 1);
    t.hi = std::min(t.lo + 1, in - 1);
    t.weight = float(source - t.lo);
  }
  return result;
}

}  // namespace

Image resizeBilinear(const Image& image, int height, int width) {
  if (height <= 0 || width <= 0)
    throw InvalidArgument("resize target " + std::to_string(height) + "×" + std::to_string(width) +
                          " must be positive");
  if (image.height <= 0 || image.width <= 0 || image.channels <= 0)
    throw InvalidArgument("cannot resize an empty image");
  const std::vector<Tap> rows = taps(image.height, height), cols = taps(image.width, width);
  Image out{height, width, image.channels, std::vector<float>(size_t(height) * size_t(width) * size_t(image.channels))};
  for (int y = 0; y < height; ++y) {
    const Tap& r = rows[size_t(y)];
    for (int x = 0; x < width; ++x) {
      const Tap& c = cols[size_t(x)];
      for (int k = 0; k < image.channels; ++k) {
        const float top = (1 - c.weight) * image.at(r.lo, c.lo, k) + c.weight * image.at(r.lo, c.hi, k);
        const float bottom = (1 - c.weight) * image.at(r.hi, c.lo, k) + c.weight * image.at(r.hi, c.hi, k);
        out.pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(image.channels) + size_t(k)] =
            (1 - r.weight) * top + r.weight * bottom;
      }
    }
  }
  return out;
}

}  // namespace tl
