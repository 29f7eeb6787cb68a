// Bilinear resizing against values PyTorch 1.13 computed with
// torch.nn.functional.interpolate(x, size, mode="bilinear", align_corners=False).
#include "data/image_resize.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

Image grey(int height, int width, std::vector<float> pixels) { return Image{height, width, 1, std::move(pixels)}; }

[[nodiscard]] ::testing::AssertionResult pixelsNear(const Image& image, const std::vector<float>& expected, float tol) {
  if (image.pixels.size() != expected.size())
    return ::testing::AssertionFailure() << image.pixels.size() << " vs " << expected.size() << " pixels";
  for (size_t i = 0; i < expected.size(); ++i)
    if (std::abs(image.pixels[i] - expected[i]) > tol)
      return ::testing::AssertionFailure() << "pixel " << i << ": " << image.pixels[i] << " vs " << expected[i];
  return ::testing::AssertionSuccess();
}

TEST(ImageResize, UpsamplingMatchesTorch) {
  const Image out = resizeBilinear(grey(2, 3, {0.0f, 0.25f, 1.0f, 0.5f, 0.75f, 0.125f}), 4, 5);
  EXPECT_EQ(out.height, 4);
  EXPECT_EQ(out.width, 5);
  EXPECT_TRUE(pixelsNear(out, {0.0f,   0.1f,   0.25f,  0.7f,     1.0f,     0.125f, 0.225f, 0.375f, 0.61875f, 0.78125f,
                               0.375f, 0.475f, 0.625f, 0.45625f, 0.34375f, 0.5f,   0.6f,   0.75f,  0.375f,   0.125f},
                         1e-6f));
}

TEST(ImageResize, DownsamplingMatchesTorch) {
  std::vector<float> ramp;
  for (int i = 0; i < 15; ++i) ramp.push_back(float(i) / 14);
  EXPECT_TRUE(
      pixelsNear(resizeBilinear(grey(3, 5, ramp), 2, 2), {0.14285715f, 0.32142857f, 0.6785714f, 0.85714287f}, 1e-6f));
}

TEST(ImageResize, SameSizeIsIdentityAndChannelsAreIndependent) {
  Image rgb{2, 2, 3, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 0.0f, 0.5f}};
  EXPECT_EQ(resizeBilinear(rgb, 2, 2).pixels, rgb.pixels);
  const Image big = resizeBilinear(rgb, 5, 3);
  for (int c = 0; c < 3; ++c) {
    const Image alone =
        resizeBilinear(grey(2, 2, {rgb.at(0, 0, c), rgb.at(0, 1, c), rgb.at(1, 0, c), rgb.at(1, 1, c)}), 5, 3);
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 3; ++x) EXPECT_EQ(big.at(y, x, c), alone.at(y, x, 0));
  }
}

TEST(ImageResize, RejectsEmptyTargetsAndImages) {
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)resizeBilinear(grey(1, 1, {0.5f}), 0, 4); }, {"0×4"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)resizeBilinear(Image{}, 4, 4); }, {"empty"}));
}

}  // namespace
}  // namespace tl
