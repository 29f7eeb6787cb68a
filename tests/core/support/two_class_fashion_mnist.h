#pragma once
// A tiny stand-in for Fashion-MNIST in its own gzipped IDX layout, for training tests: two classes that a
// one-block ViT separates within a few steps: class 0 is a bright horizontal bar (rows 10–17), class 1 a
// vertical one (columns 10–17), both over faint seeded noise. They differ inside every patch they cover, not
// only in where they are (a single block's [CLS] sees patch positions only through its attention weights),
// and a ±2-px shift or a mirror (the training augmentation) keeps them apart.
// Point TL_FASHION_MNIST_DIR at the folder.
#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/random.h"

namespace tl::test {

inline std::string idxHeader(const std::vector<uint32_t>& dims) {
  std::string out = {0, 0, 0x08, char(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out += char((d >> shift) & 0xff);
  return out;
}

inline void writeGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f || gzwrite(f, bytes.data(), unsigned(bytes.size())) != int(bytes.size()) || gzclose(f) != Z_OK)
    throw std::runtime_error("cannot write " + path);
}

// Labels alternate 0, 1, 0, ... so any prefix (--limit-train) holds both classes.
inline void writeTwoClassSplit(const std::string& dir, const std::string& prefix, uint32_t count, uint64_t seed) {
  SeededRandom random(seed);
  std::string pixels, labels;
  for (uint32_t i = 0; i < count; ++i) {
    const int label = int(i % 2);
    labels += char(label);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const int across = label == 0 ? r : c, along = label == 0 ? c : r;
        const bool bar = across >= 10 && across < 18 && along >= 4 && along < 24;
        pixels += char(bar ? 200 + int(55 * random.uniform()) : int(40 * random.uniform()));
      }
  }
  writeGzip(dir + "/" + prefix + "-images-idx3-ubyte.gz", idxHeader({count, 28, 28}) + pixels);
  writeGzip(dir + "/" + prefix + "-labels-idx1-ubyte.gz", idxHeader({count}) + labels);
}

inline void writeTwoClassFashionMnist(const std::string& dir, uint32_t trainCount = 256, uint32_t testCount = 64) {
  writeTwoClassSplit(dir, "train", trainCount, 1);
  writeTwoClassSplit(dir, "t10k", testCount, 2);
}

}  // namespace tl::test
