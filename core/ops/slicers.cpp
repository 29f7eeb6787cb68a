#include "ops/slicers.h"

#include <cmath>

#include "common/errors.h"
#include "data/random.h"
#include "io/npy_cache.h"

namespace tl {
namespace {

std::string shapeText(Eigen::Index rows, Eigen::Index cols) { return std::to_string(rows) + "×" + std::to_string(cols); }

// slicer=random: row-normalised Gaussian directions (docs/operators/esp.md#slicers).
MatD randomDirections(int L, int d, uint64_t seed) {
  SeededRandom random(seed);
  MatD theta(L, d);
  for (int l = 0; l < L; ++l) {
    for (int c = 0; c < d; ++c) theta(l, c) = random.normal();
    theta.row(l) /= theta.row(l).norm();
  }
  return theta;
}

}  // namespace

Slicer parseSlicer(const std::string& text) {
  if (text == "axis") return Slicer::Axis;
  if (text == "random") return Slicer::Random;
  if (text == "file") return Slicer::File;
  throw InvalidArgument("slicer = '" + text + "' is not valid; expected axis, random or file");
}

MatD readSliceFile(const std::string& path) {
  MatD theta;
  try {
    theta = readNpyMatrixCached(path);
  } catch (const FileError& e) {
    throw FileError(std::string("slices = ") + path + ": " + e.what());
  }
  for (Eigen::Index l = 0; l < theta.rows(); ++l) {
    if (!theta.row(l).allFinite())
      throw InvalidArgument("slices = " + path + ": row " + std::to_string(l) +
                            " has a non-finite entry; every slice direction must be finite");
    if (theta.row(l).squaredNorm() == 0)
      throw InvalidArgument("slices = " + path + ": row " + std::to_string(l) +
                            " is zero; a slice direction must be nonzero");
  }
  return theta;
}

MatD sliceDirections(const SliceSpec& spec, int d) {
  switch (spec.slicer) {
    case Slicer::Axis:
      if (spec.L != 0 && spec.L != d)
        throw InvalidArgument("L = " + std::to_string(spec.L) + " does not fit slicer=axis, which has L = d = " +
                              std::to_string(d) + " slices; leave L at 0 or use slicer=random");
      return MatD::Identity(d, d);
    case Slicer::Random:
      return randomDirections(spec.L == 0 ? d : spec.L, d, spec.seed);
    case Slicer::File: {
      const MatD& theta = spec.fileDirections;
      const Eigen::Index L = spec.L == 0 ? theta.rows() : spec.L;
      if (theta.rows() != L || theta.cols() != d || L == 0)
        throw InvalidArgument("slices has shape " + shapeText(theta.rows(), theta.cols()) + " but the head needs L×d = " +
                              (spec.L == 0 ? std::string("L") : std::to_string(L)) + "×" + std::to_string(d) +
                              " directions (one per row); save an array with d = " + std::to_string(d) + " columns");
      return theta;
    }
  }
  return {};
}

}  // namespace tl
