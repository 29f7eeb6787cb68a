#pragma once
// Seeded randomness that is bit-for-bit identical on every platform: std::mt19937_64 is fully specified,
// std::normal_distribution is not, so normals come from our own Box–Muller transform.
#include <cstdint>
#include <random>

namespace tl {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : engine_(seed) {}
  double uniform();   // [0, 1)
  double normal();    // N(0, 1)
  // Advances the stream exactly as `count` calls of normal() would, without the transform for the values
  // nobody reads (for draws kept only so that later draws stay where they were).
  void skipNormals(uint64_t count);
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
  bool haveSpare_ = false;
  double spare_ = 0;
};

}  // namespace tl
