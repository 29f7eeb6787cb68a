#pragma once
// IDX files (the MNIST family's format, http://yann.lecun.com/exdb/mnist/): a 4-byte magic
// (0, 0, type, rank), `rank` big-endian uint32 dimensions, then the row-major data. Only unsigned bytes
// (type 0x08) are read, which is what image and label sets use. Gzipped and plain files read alike.
#include <cstdint>
#include <string>
#include <vector>

namespace tl {

struct IdxArray {
  std::vector<int64_t> shape;
  std::vector<uint8_t> values;  // row-major, product(shape) bytes
};

// Throws FileError naming the file and what is wrong (magic, type, dimensions, data size, gzip damage).
IdxArray readIdx(const std::string& path);

}  // namespace tl
