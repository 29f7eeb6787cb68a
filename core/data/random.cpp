#include "data/random.h"

#include <cmath>

namespace tl {

double SeededRandom::uniform() {
  // 53 random bits → a double in [0, 1), independent of the standard library's distribution code.
  return double(engine_() >> 11) * (1.0 / 9007199254740992.0);
}

double SeededRandom::normal() {
  if (haveSpare_) {
    haveSpare_ = false;
    return spare_;
  }
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * M_PI * u2;
  spare_ = radius * std::sin(angle);
  haveSpare_ = true;
  return radius * std::cos(angle);
}

void SeededRandom::skipNormals(uint64_t count) {
  if (count > 0 && haveSpare_) {
    haveSpare_ = false;
    --count;
  }
  for (; count >= 2; count -= 2) {  // a whole pair, both values unread: the uniforms normal() would take
    double u1 = uniform();
    while (u1 <= 0) u1 = uniform();
    uniform();
  }
  if (count == 1) normal();  // its pair's second value stays as the spare, as after a call of normal()
}

}  // namespace tl
