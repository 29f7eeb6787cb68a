#pragma once
// NumPy .npy files (format 1.0–3.0), C order. Read: float32/float64, plus bool and integer types for masks.
// Write: float32/float64. Corrupt or unsupported files raise FileError naming the file and the problem.
#include <cstdint>
#include <string>
#include <vector>

#include "common/matrix.h"

namespace tl {

struct NpyArray {
  std::vector<int64_t> shape;
  std::string dtype;          // descr as stored, e.g. "<f8"
  std::vector<double> values;  // converted to double, C order
};

NpyArray readNpy(const std::string& path);

// 1-D arrays read as a column (n × 1). Throws FileError for 0-D or >2-D arrays.
template <class T>
Mat<T> readNpyMatrix(const std::string& path);
// A 3-D float array [N, rows, cols] as N matrices (e.g. N head instances of Q). FileError otherwise.
std::vector<MatD> readNpyStack(const std::string& path);
// A mask: any numeric type, 1-D of length n (or n×1), entries exactly 1 (valid) or 0 (padding); any other
// value is rejected (it usually means a wrong file, e.g. token ids instead of a mask).
Mask readNpyMask(const std::string& path);

// Writes atomically (temporary file + rename).
template <class T>
void writeNpy(const std::string& path, const Mat<T>& m);
template <class T>
void writeNpy(const std::string& path, const Vec<T>& v);

// In-memory encoding (used by writeNpy and tests).
template <class T>
std::string encodeNpy(const T* data, const std::vector<int64_t>& shape);

}  // namespace tl
