// libpng reports errors by longjmp. The decode runs in a function whose locals are all plain C data, so the
// jump skips no destructor; C++ objects are built only after it has returned.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/errors.h"
#include "data/image_codecs.h"

namespace tl {
namespace {

struct PngState {  // plain C data only: it is written to on both sides of the longjmp
  const unsigned char* input;
  size_t inputSize;
  size_t inputPos;
  png_structp png;
  png_infop info;
  unsigned char* samples;  // malloc'd row-major samples
  png_bytep* rows;         // malloc'd row pointers into samples
  png_uint_32 width;
  png_uint_32 height;
  int channels;
  int bitDepth;
  char error[256];
};

void onError(png_structp png, png_const_charp message) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->error, sizeof s->error, "%s", message);
  png_longjmp(png, 1);
}

bool failWith(PngState* s, const char* message) {
  std::snprintf(s->error, sizeof s->error, "%s", message);
  return false;
}

// Warnings concern ancillary chunks (bad gamma, unknown profile), which are ignored anyway.
void onWarning(png_structp, png_const_charp) {}

void readInput(png_structp png, png_bytep out, size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->inputSize - s->inputPos) png_error(png, "the file is truncated");
  std::memcpy(out, s->input + s->inputPos, n);
  s->inputPos += n;
}

// Normalises every PNG layout to 1 or 3 channels of 8 or 16 bits: palettes become RGB, 1/2/4-bit grey
// becomes 8-bit (scaled to 0–255), alpha is stripped, 16-bit samples are byte-swapped to the host order.
bool decodeToSamples(PngState* s) {
  s->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, onError, onWarning);
  if (!s->png) return failWith(s, "libpng could not start");
  s->info = png_create_info_struct(s->png);
  if (!s->info) return failWith(s, "libpng could not start");
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_set_read_fn(s->png, s, readInput);
  png_read_info(s->png, s->info);
  s->width = png_get_image_width(s->png, s->info);
  s->height = png_get_image_height(s->png, s->info);
  if (uint64_t(s->width) * s->height > kMaxImagePixels) {
    std::snprintf(s->error, sizeof s->error, "%u×%u pixels is over the %llu-megapixel limit", unsigned(s->width),
                  unsigned(s->height), (unsigned long long)(kMaxImagePixels >> 20));
    return false;
  }
  const int colorType = png_get_color_type(s->png, s->info);
  if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s->png);
  if (colorType == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(s->png, s->info) < 8)
    png_set_expand_gray_1_2_4_to_8(s->png);
  // Expanding a palette also turns its transparency (tRNS) into an alpha channel, which goes too.
  if ((colorType & PNG_COLOR_MASK_ALPHA) || png_get_valid(s->png, s->info, PNG_INFO_tRNS)) png_set_strip_alpha(s->png);
  png_set_swap(s->png);  // 16-bit samples are big-endian in the file; no effect on 8-bit
  png_set_interlace_handling(s->png);
  png_read_update_info(s->png, s->info);
  s->channels = png_get_channels(s->png, s->info);
  s->bitDepth = png_get_bit_depth(s->png, s->info);
  const size_t rowBytes = png_get_rowbytes(s->png, s->info);
  s->samples = static_cast<unsigned char*>(std::malloc(rowBytes * s->height));
  s->rows = static_cast<png_bytep*>(std::malloc(sizeof(png_bytep) * s->height));
  if (!s->samples || !s->rows) return failWith(s, "out of memory");
  for (png_uint_32 y = 0; y < s->height; ++y) s->rows[y] = s->samples + y * rowBytes;
  png_read_image(s->png, s->rows);
  png_read_end(s->png, nullptr);  // checks the chunks after the image data, so truncation is caught
  return true;
}

// Frees what decodeToSamples allocated, however it ended.
struct PngCleanup {
  PngState& s;
  ~PngCleanup() {
    png_destroy_read_struct(s.png ? &s.png : nullptr, s.info ? &s.info : nullptr, nullptr);
    std::free(s.samples);
    std::free(s.rows);
  }
};

}  // namespace

Image decodePng(const std::string& bytes, const std::string& name) {
  PngState s{};
  s.input = reinterpret_cast<const unsigned char*>(bytes.data());
  s.inputSize = bytes.size();
  PngCleanup cleanup{s};
  if (!decodeToSamples(&s)) throw FileError(name + ": not a readable PNG image: " + s.error);
  if (s.channels != 1 && s.channels != 3)
    throw FileError(name + ": PNG decodes to " + std::to_string(s.channels) + " channels; expected 1 or 3");

  Image image;
  image.height = int(s.height);
  image.width = int(s.width);
  image.channels = s.channels;
  image.pixels.resize(size_t(s.height) * s.width * size_t(s.channels));
  if (s.bitDepth == 16) {
    for (size_t i = 0; i < image.pixels.size(); ++i) {
      uint16_t v;
      std::memcpy(&v, s.samples + 2 * i, 2);
      image.pixels[i] = float(v) / 65535.0f;
    }
  } else {
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = float(s.samples[i]) / 255.0f;
  }
  return image;
}

}  // namespace tl
