#pragma once
// The learning rate of every optimiser step: a linear warm-up from lr/warmupSteps to lr, then cosine decay
// to 0 at the last step (Loshchilov & Hutter, SGDR, without restarts). A pure function of the global step,
// so a resumed run continues the schedule exactly. No LibTorch here.
#include <cstdint>

namespace tl {

struct LrSchedule {
  double lr = 1e-3;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 1;
};

// step is 0-based; steps at or past totalSteps get the final value 0.
double learningRate(const LrSchedule& schedule, int64_t step);

// warmup is a fraction of totalSteps; at least one warm-up step so the first update is not at full lr.
LrSchedule warmupCosine(double lr, double warmup, int64_t totalSteps);

}  // namespace tl
