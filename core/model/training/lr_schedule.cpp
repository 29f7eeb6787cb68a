#include "model/training/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace tl {

double learningRate(const LrSchedule& s, int64_t step) {
  if (step < s.warmupSteps) return s.lr * double(step + 1) / double(s.warmupSteps);
  const int64_t decaySteps = s.totalSteps - s.warmupSteps;
  if (decaySteps <= 0 || step >= s.totalSteps) return 0;
  const double progress = double(step - s.warmupSteps) / double(decaySteps);
  return 0.5 * s.lr * (1 + std::cos(M_PI * progress));
}

LrSchedule warmupCosine(double lr, double warmup, int64_t totalSteps) {
  LrSchedule s;
  s.lr = lr;
  s.totalSteps = std::max<int64_t>(totalSteps, 1);
  s.warmupSteps = std::clamp<int64_t>(std::llround(warmup * double(s.totalSteps)), 1, s.totalSteps);
  return s;
}

}  // namespace tl
