#pragma once
// ESP slice directions Θ (L×d, one direction per row; docs/operators/esp.md#slicers).
//  axis   : Θ = I_d, L = d (the paper's default: slice l is feature l of the head)
//  random : L frozen directions θ_l = φ_l/‖φ_l‖, φ_l ~ N(0, I_d) from an explicit seed (SeededRandom,
//           filled row by row), so a result can be regenerated bit-for-bit
//  file   : a user-supplied or learned L×d array read from a .npy file (parameter `slices`)
// Only a direction's orientation matters: sorting and the costs D_l (full-space ‖q − k‖^p) do not
// depend on ‖θ_l‖, so file directions are used as given (they must be finite and nonzero).
#include <cstdint>
#include <string>

#include "common/matrix.h"

namespace tl {

enum class Slicer { Axis, Random, File };

Slicer parseSlicer(const std::string& text);

// Reads and checks a slice file: a finite L×d float array with no zero row. Errors name `slices`.
MatD readSliceFile(const std::string& path);

struct SliceSpec {
  Slicer slicer = Slicer::Axis;
  int L = 0;              // number of slices; 0 = d (random, file: the file's row count)
  uint64_t seed = 0;      // random slicer
  MatD fileDirections;    // file slicer: the array read by readSliceFile
};

// Θ for head dimension d. Throws InvalidArgument naming `L` or `slices` when the spec does not fit d.
MatD sliceDirections(const SliceSpec& spec, int d);

}  // namespace tl
