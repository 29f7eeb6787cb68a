// Image files as the model sources open them (data/image_file.h): the signature picks libpng or libjpeg, then the
// conversion to the colour the model wants.
#include "data/image_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = tl::fuzz::bytesOf(data, size);
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::decodeImage(bytes, "fuzz", tl::ImageColor::Grey); });
  tl::fuzz::rejectOnlyWithProjectErrors([&] { tl::decodeImage(bytes, "fuzz", tl::ImageColor::Rgb); });
  return 0;
}
