// libjpeg reports errors through error_exit, which must not return; it longjmps back into a function whose
// locals are all plain C data, so the jump skips no destructor. C++ objects are built only afterwards.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "common/errors.h"
#include "data/image_codecs.h"

namespace tl {
namespace {

struct JpegState {  // plain C data only: it is written to on both sides of the longjmp
  jpeg_decompress_struct info;
  jpeg_error_mgr errors;
  jmp_buf jump;
  unsigned char* samples;  // malloc'd row-major samples
  int width;
  int height;
  int channels;
  char error[JMSG_LENGTH_MAX + 64];
};

[[noreturn]] void onError(j_common_ptr info) {
  auto* s = static_cast<JpegState*>(info->client_data);
  (*info->err->format_message)(info, s->error);
  std::longjmp(s->jump, 1);
}

// libjpeg "warnings" (level −1) are corrupt or missing data that it would paper over with grey; a
// damaged file must fail rather than give a model silently wrong pixels. Trace messages are ignored.
void onMessage(j_common_ptr info, int level) {
  if (level < 0) onError(info);
}

bool failWith(JpegState* s, const char* message) {
  std::snprintf(s->error, sizeof s->error, "%s", message);
  return false;
}

bool decodeToSamples(JpegState* s, const unsigned char* data, unsigned long size) {
  s->info.err = jpeg_std_error(&s->errors);
  s->errors.error_exit = onError;
  s->errors.emit_message = onMessage;
  s->info.client_data = s;
  if (setjmp(s->jump)) return false;
  jpeg_create_decompress(&s->info);
  jpeg_mem_src(&s->info, data, size);
  jpeg_read_header(&s->info, TRUE);
  if (s->info.jpeg_color_space == JCS_CMYK || s->info.jpeg_color_space == JCS_YCCK)
    return failWith(s, "CMYK JPEGs are not supported; convert the image to RGB");
  if (uint64_t(s->info.image_width) * s->info.image_height > kMaxImagePixels) {
    std::snprintf(s->error, sizeof s->error, "%u×%u pixels is over the %llu-megapixel limit",
                  unsigned(s->info.image_width), unsigned(s->info.image_height),
                  (unsigned long long)(kMaxImagePixels >> 20));
    return false;
  }
  s->info.out_color_space = s->info.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&s->info);
  s->width = int(s->info.output_width);
  s->height = int(s->info.output_height);
  s->channels = s->info.output_components;
  const size_t rowBytes = size_t(s->width) * size_t(s->channels);
  s->samples = static_cast<unsigned char*>(std::malloc(rowBytes * size_t(s->height)));
  if (!s->samples) return failWith(s, "out of memory");
  while (s->info.output_scanline < s->info.output_height) {
    JSAMPROW row = s->samples + size_t(s->info.output_scanline) * rowBytes;
    jpeg_read_scanlines(&s->info, &row, 1);
  }
  jpeg_finish_decompress(&s->info);
  return true;
}

// Frees what decodeToSamples allocated, however it ended (jpeg_destroy is safe on a zeroed struct).
struct JpegCleanup {
  JpegState& s;
  ~JpegCleanup() {
    jpeg_destroy_decompress(&s.info);
    std::free(s.samples);
  }
};

}  // namespace

Image decodeJpeg(const std::string& bytes, const std::string& name) {
  JpegState s{};
  JpegCleanup cleanup{s};
  if (!decodeToSamples(&s, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()))
    throw FileError(name + ": not a readable JPEG image: " + s.error);
  if (s.channels != 1 && s.channels != 3)
    throw FileError(name + ": JPEG decodes to " + std::to_string(s.channels) + " channels; expected 1 or 3");

  Image image;
  image.height = s.height;
  image.width = s.width;
  image.channels = s.channels;
  image.pixels.resize(size_t(s.height) * size_t(s.width) * size_t(s.channels));
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = float(s.samples[i]) / 255.0f;
  return image;
}

}  // namespace tl
