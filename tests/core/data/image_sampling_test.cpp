#include "data/image_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace tl {
namespace {

TEST(ImageSampling, ShuffledIndicesArePermutationsFixedByTheSeed) {
  SeededRandom a(5), b(5), c(6);
  const auto pa = shuffledIndices(1000, a), pb = shuffledIndices(1000, b), pc = shuffledIndices(1000, c);
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
  std::vector<int64_t> sorted = pa;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(pa, identity);
  SeededRandom d(1);
  EXPECT_TRUE(shuffledIndices(0, d).empty());
}

// A single bright pixel shows the shift and the mirror directly.
TEST(ImageSampling, CropFlipMovesPixelsByAtMostThePaddingAndMirrorsHalfTheTime) {
  constexpr int rows = 28, cols = 28;
  std::vector<uint8_t> in(rows * cols, 0), out(rows * cols);
  in[10 * cols + 6] = 255;
  SeededRandom random(3);
  int flips = 0;
  std::set<std::pair<int, int>> shifts;
  for (int trial = 0; trial < 400; ++trial) {
    randomCropFlip(in.data(), out.data(), rows, cols, 2, random);
    const auto at = std::find(out.begin(), out.end(), uint8_t(255)) - out.begin();
    ASSERT_LT(at, rows * cols);
    EXPECT_EQ(std::count(out.begin(), out.end(), uint8_t(0)), rows * cols - 1);
    const int r = int(at / cols), c = int(at % cols);
    const bool flipped = c > cols / 2;  // the pixel sits left of the centre, so a mirror puts it right
    flips += flipped;
    const int unflippedCol = flipped ? cols - 1 - c : c;
    EXPECT_LE(std::abs(r - 10), 2);
    EXPECT_LE(std::abs(unflippedCol - 6), 2);
    shifts.insert({r - 10, unflippedCol - 6});
  }
  EXPECT_EQ(shifts.size(), 25u);  // every shift in [−2, 2]² occurs
  EXPECT_GT(flips, 150);
  EXPECT_LT(flips, 250);
}

TEST(ImageSampling, PixelsShiftedInFromOutsideAreBackground) {
  std::vector<uint8_t> in(4 * 4, 9), out(4 * 4);
  SeededRandom random(11);
  bool sawPadding = false;
  for (int trial = 0; trial < 20; ++trial) {
    randomCropFlip(in.data(), out.data(), 4, 4, 1, random);
    for (uint8_t v : out) EXPECT_TRUE(v == 9 || v == 0);
    sawPadding |= std::count(out.begin(), out.end(), uint8_t(0)) > 0;
  }
  EXPECT_TRUE(sawPadding);
}

}  // namespace
}  // namespace tl
