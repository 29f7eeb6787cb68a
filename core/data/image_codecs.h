#pragma once
// Internal to core/data: the libpng and libjpeg decoders behind image_file.h. Each returns the file's own
// colour layout, 1 (grey) or 3 (RGB) channels in [0, 1], and throws FileError naming `name` with the
// library's reason when the bytes are not a readable image.
#include <cstdint>
#include <string>

#include "data/image_file.h"

namespace tl {

// Larger images are refused before any pixel buffer is allocated (a corrupt header can claim anything).
constexpr uint64_t kMaxImagePixels = uint64_t(64) << 20;

Image decodePng(const std::string& bytes, const std::string& name);
Image decodeJpeg(const std::string& bytes, const std::string& name);

}  // namespace tl
