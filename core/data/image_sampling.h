#pragma once
// How training draws its images: a seeded order per epoch and a seeded random crop and flip per image.
// Both use SeededRandom's own arithmetic (never std::shuffle or std::uniform_int_distribution, whose
// algorithms differ between standard libraries), so a seed gives the same batches on every platform.
#include <cstdint>
#include <vector>

#include "data/random.h"

namespace tl {

// A uniformly random permutation of 0..n−1 (Fisher–Yates).
std::vector<int64_t> shuffledIndices(int64_t n, SeededRandom& random);

// The rows×cols greyscale image shifted by up to `pad` pixels in each direction (a crop of the image
// zero-padded by `pad`, as torchvision's RandomCrop(padding=pad)), then mirrored left-right with
// probability 1/2. Draws three numbers per image. `out` holds rows·cols bytes and must not alias `in`.
void randomCropFlip(const uint8_t* in, uint8_t* out, int rows, int cols, int pad, SeededRandom& random);

}  // namespace tl
