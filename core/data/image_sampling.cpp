#include "data/image_sampling.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace tl {
namespace {

// An integer in 0..n−1 from one uniform draw.
int64_t below(int64_t n, SeededRandom& random) { return std::min<int64_t>(int64_t(random.uniform() * double(n)), n - 1); }

}  // namespace

std::vector<int64_t> shuffledIndices(int64_t n, SeededRandom& random) {
  std::vector<int64_t> order(size_t(std::max<int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[size_t(i)], order[size_t(below(i + 1, random))]);
  return order;
}

void randomCropFlip(const uint8_t* in, uint8_t* out, int rows, int cols, int pad, SeededRandom& random) {
  // Output pixel (r, c) reads input (r + dy, c + dx), or the zero padding outside the image.
  const int dy = int(below(2 * pad + 1, random)) - pad;
  const int dx = int(below(2 * pad + 1, random)) - pad;
  const bool flip = random.uniform() < 0.5;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int sr = r + dy, sc = c + dx;
      const uint8_t value = (sr >= 0 && sr < rows && sc >= 0 && sc < cols) ? in[sr * cols + sc] : uint8_t(0);
      out[r * cols + (flip ? cols - 1 - c : c)] = value;
    }
  }
}

}  // namespace tl
