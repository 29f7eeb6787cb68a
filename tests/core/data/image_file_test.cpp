// PNG decoding against files from an independent encoder (scripts/reference/make_image_file_fixtures.py),
// JPEG decoding against libjpeg-encoded inputs made here, colour conversion, and damaged files.
#include "data/image_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include <nlohmann/json.hpp>

#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

const std::string kFixtures = std::string(TL_FIXTURE_DIR) + "/image_files/";

struct JpegOptions {
  bool progressive = false;
  J_COLOR_SPACE space = JCS_RGB;
};

// Encodes 8-bit samples (height × width × components) at quality 100 without chroma subsampling.
std::string encodeJpeg(int height, int width, int components, const std::vector<uint8_t>& samples,
                       JpegOptions options = {}) {
  jpeg_compress_struct info{};
  jpeg_error_mgr errors{};
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = JDIMENSION(width);
  info.image_height = JDIMENSION(height);
  info.input_components = components;
  info.in_color_space = options.space;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  for (int c = 0; c < info.num_components; ++c) info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;
  if (options.progressive) jpeg_simple_progression(&info);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(samples.data() + size_t(info.next_scanline) * size_t(width * components));
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::string out(reinterpret_cast<char*>(buffer), size);
  jpeg_destroy_compress(&info);
  std::free(buffer);
  return out;
}

std::vector<uint8_t> gradient(int height, int width, int components) {
  std::vector<uint8_t> s;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < components; ++c) s.push_back(uint8_t(40 + 6 * y + 4 * x + 30 * c));
  return s;
}

[[nodiscard]] ::testing::AssertionResult closeTo(const Image& image, const std::vector<uint8_t>& samples, float tol) {
  if (image.pixels.size() != samples.size())
    return ::testing::AssertionFailure() << image.pixels.size() << " vs " << samples.size() << " samples";
  for (size_t i = 0; i < samples.size(); ++i) {
    if (std::abs(image.pixels[i] - samples[i] / 255.0f) > tol)
      return ::testing::AssertionFailure()
             << "sample " << i << ": " << image.pixels[i] * 255 << " vs " << int(samples[i]);
  }
  return ::testing::AssertionSuccess();
}

std::string pngChunk(const std::string& type, const std::string& data) {
  std::string out;
  const uint32_t n = uint32_t(data.size());
  for (int s = 24; s >= 0; s -= 8) out += char((n >> s) & 0xff);
  const std::string body = type + data;
  const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size())));
  out += body;
  for (int s = 24; s >= 0; s -= 8) out += char((crc >> s) & 0xff);
  return out;
}

TEST(ImageFile, PngFixturesDecodeToTheEncodedSamples) {
  const auto expected = nlohmann::json::parse(test::readBytes(kFixtures + "expected.json"));
  ASSERT_EQ(expected.size(), 7u);
  for (const auto& [name, e] : expected.items()) {
    SCOPED_TRACE(name);
    const int channels = e["channels"];
    const Image image = readImageFile(kFixtures + name, channels == 1 ? ImageColor::Grey : ImageColor::Rgb);
    EXPECT_EQ(image.height, e["height"].get<int>());
    EXPECT_EQ(image.width, e["width"].get<int>());
    EXPECT_EQ(image.channels, channels);
    const float max = e["max"];
    const auto& samples = e["samples"];
    ASSERT_EQ(image.pixels.size(), samples.size());
    for (size_t i = 0; i < samples.size(); ++i) ASSERT_EQ(image.pixels[i], samples[i].get<float>() / max) << i;
  }
}

TEST(ImageFile, ColourConversionFollowsPil) {
  const Image rgb = readImageFile(kFixtures + "rgb8_6x4.png", ImageColor::Rgb);
  const Image grey = readImageFile(kFixtures + "rgb8_6x4.png", ImageColor::Grey);
  ASSERT_EQ(grey.channels, 1);
  ASSERT_EQ(grey.pixels.size(), 24u);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 4; ++x) {
      const double luma = 0.299 * rgb.at(y, x, 0) + 0.587 * rgb.at(y, x, 1) + 0.114 * rgb.at(y, x, 2);
      EXPECT_NEAR(grey.at(y, x, 0), luma, 1e-6);
    }
  const Image single = readImageFile(kFixtures + "grey8_5x7.png", ImageColor::Grey);
  const Image spread = readImageFile(kFixtures + "grey8_5x7.png", ImageColor::Rgb);
  ASSERT_EQ(spread.channels, 3);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(spread.at(y, x, c), single.at(y, x, 0));
}

TEST(ImageFile, JpegDecodesCloseToTheEncodedSamples) {
  const std::vector<uint8_t> rgb = gradient(12, 20, 3);
  const Image colour = decodeImage(encodeJpeg(12, 20, 3, rgb), "rgb.jpg", ImageColor::Rgb);
  EXPECT_EQ(colour.height, 12);
  EXPECT_EQ(colour.width, 20);
  EXPECT_EQ(colour.channels, 3);
  EXPECT_TRUE(closeTo(colour, rgb, 3.0f / 255));

  const std::vector<uint8_t> grey = gradient(9, 10, 1);
  const Image g = decodeImage(encodeJpeg(9, 10, 1, grey, {false, JCS_GRAYSCALE}), "grey.jpg", ImageColor::Grey);
  EXPECT_EQ(g.channels, 1);
  EXPECT_TRUE(closeTo(g, grey, 2.0f / 255));

  const Image progressive = decodeImage(encodeJpeg(12, 20, 3, rgb, {true, JCS_RGB}), "p.jpg", ImageColor::Rgb);
  EXPECT_TRUE(closeTo(progressive, rgb, 3.0f / 255));
}

TEST(ImageFile, JpegFileIsReadByContentNotName) {
  test::TempDir dir;
  const std::string path = dir.file("photo.png");  // misnamed on purpose
  test::writeBytes(path, encodeJpeg(4, 4, 3, gradient(4, 4, 3)));
  EXPECT_EQ(readImageFile(path, ImageColor::Grey).channels, 1);
}

TEST(ImageFile, DamagedJpegsAreRefused) {
  const std::string good = encodeJpeg(32, 32, 3, gradient(32, 32, 3));
  EXPECT_TRUE(
      throwsWith<FileError>([&] { (void)decodeImage(good.substr(0, good.size() / 2), "cut.jpg", ImageColor::Rgb); },
                            {"cut.jpg", "not a readable JPEG"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)decodeImage(good.substr(0, 40), "header.jpg", ImageColor::Rgb); },
                                    {"header.jpg", "JPEG"}));
  const std::string cmyk = encodeJpeg(4, 4, 4, gradient(4, 4, 4), {false, JCS_CMYK});
  EXPECT_TRUE(
      throwsWith<FileError>([&] { (void)decodeImage(cmyk, "print.jpg", ImageColor::Rgb); }, {"print.jpg", "CMYK"}));
}

TEST(ImageFile, DamagedPngsAreRefused) {
  const std::string good = test::readBytes(kFixtures + "rgb8_interlaced_11x10.png");
  EXPECT_TRUE(
      throwsWith<FileError>([&] { (void)decodeImage(good.substr(0, good.size() - 30), "cut.png", ImageColor::Rgb); },
                            {"cut.png", "not a readable PNG"}));
  std::string flipped = good;
  flipped[good.find("IDAT") + 10] ^= 0x20;
  EXPECT_TRUE(
      throwsWith<FileError>([&] { (void)decodeImage(flipped, "crc.png", ImageColor::Rgb); }, {"crc.png", "CRC"}));

  // A valid header claiming 20000 × 20000 pixels is refused before any pixel memory is taken.
  std::string ihdr;
  for (uint32_t v : {20000u, 20000u})
    for (int s = 24; s >= 0; s -= 8) ihdr += char((v >> s) & 0xff);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);
  const std::string huge =
      std::string("\x89PNG\r\n\x1a\n", 8) + pngChunk("IHDR", ihdr) + pngChunk("IDAT", "x") + pngChunk("IEND", "");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)decodeImage(huge, "huge.png", ImageColor::Rgb); },
                                    {"huge.png", "20000×20000", "64-megapixel limit"}));
}

TEST(ImageFile, OtherFilesAreRefusedByName) {
  EXPECT_TRUE(throwsWith<FileError>([] { (void)decodeImage("GIF89a....", "anim.gif", ImageColor::Rgb); },
                                    {"anim.gif", "not a PNG or JPEG"}));
  EXPECT_TRUE(throwsWith<FileError>([] { (void)decodeImage("", "empty.png", ImageColor::Rgb); }, {"empty.png"}));
  EXPECT_TRUE(throwsWith<FileError>([] { (void)readImageFile("/nonexistent/x.png", ImageColor::Rgb); },
                                    {"/nonexistent/x.png"}));
}

}  // namespace
}  // namespace tl
