#pragma once
// Resampling images to a model's input size.
#include "data/image_file.h"

namespace tl {

// Bilinear with half-pixel centres, matching torch.nn.functional.interpolate(mode="bilinear",
// align_corners=False, antialias=False). Like it, shrinking does not low-pass filter first, so shrinking
// by more than 2× skips pixels. Throws InvalidArgument for a non-positive size or an empty image.
Image resizeBilinear(const Image& image, int height, int width);

}  // namespace tl
