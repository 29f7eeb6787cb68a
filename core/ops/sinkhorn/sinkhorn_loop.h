#pragma once
// The one log-domain Sinkhorn loop (docs/operators/sinkhorn.md#definition), over any score geometry
// (score_geometry.h): dense Sinkhorn and banded Sinkhorn differ only in their support and their marginals.
//
// Potentials are kept in eps units (ut = u/eps, vt = v/eps) so each half-step is one log-sum-exp over X.
// Marginal errors after step t need the sums of both sides of plan t. The closing side comes from step t's
// own log-sum-exp; the other side is exactly what step t+1 computes (its LSE at the old potential), so the
// loop runs one extra half-step without updating to get the last plan's open side: T+1 passes in all.
#include <cmath>
#include <limits>

#include "common/feedback.h"
#include "ops/marginals.h"
#include "ops/plan_result.h"

namespace tl {

struct SinkhornLoopOptions {
  int budget = 10;             // single normalisations, rows first
  // The first `centredFullSteps` full steps end with the gauge (u − m, v + m), m = mean of active u
  // (docs/operators/banded.md#definition: the stopped base is centred, the tail runs raw). Plans are
  // unchanged by it.
  int centredFullSteps = 0;
  const char* stage = "sinkhorn";
};

// The declared targets of a plan with log marginals logMu, logNu (transport scale, −inf = inactive) in
// attention scale `scale`, and whether their totals differ (docs/conventions.md#mass-mismatch).
template <class T>
void setMarginalTargets(const Vec<T>& logMu, const Vec<T>& logNu, T scale, PlanResult<T>& r) {
  static constexpr T negInf = -std::numeric_limits<T>::infinity();
  auto targetOf = [scale](const Vec<T>& logMarginal) -> Vec<T> {
    return (logMarginal.array() == negInf).select(T(0), scale * logMarginal.array().exp()).matrix();
  };
  r.rowTarget = targetOf(logMu);
  r.colTarget = targetOf(logNu);
  r.massMismatch = std::abs(double(r.rowTarget.sum() - r.colTarget.sum())) > 1e-6 * double(r.rowTarget.size());
}

// logMu / logNu: log marginals in transport scale (−inf = inactive token: its potential stays −inf and
// it carries no mass). The attention plan is scale · exp(X + ut ⊕ vt). Fills duals, histories, errors and
// targets of `r`; the caller forms the plan (dense or lazy).
template <class T, class Geometry>
void runSinkhornLoop(const Geometry& X, const Vec<T>& logMu, const Vec<T>& logNu, T eps, T scale,
                     const SinkhornLoopOptions& options, Feedback& feedback, PlanResult<T>& r, Vec<T>& ut, Vec<T>& vt) {
  static constexpr T negInf = -std::numeric_limits<T>::infinity();
  // Closure: potential = log marginal − LSE; inactive tokens (log marginal −inf) keep −inf, never NaN.
  auto closure = [](const Vec<T>& logMarginal, const Vec<T>& lse) -> Vec<T> {
    return (logMarginal.array() == negInf).select(negInf, logMarginal - lse).matrix();
  };
  auto sums = [scale](const Vec<T>& potential, const Vec<T>& lse) -> Vec<T> {
    return (potential.array() == negInf).select(T(0), scale * (potential + lse).array().exp()).matrix();
  };

  setMarginalTargets(logMu, logNu, scale, r);

  ut = (logMu.array() == negInf).select(negInf, Vec<T>::Zero(logMu.size())).matrix();
  vt = (logNu.array() == negInf).select(negInf, Vec<T>::Zero(logNu.size())).matrix();
  const int T_ = options.budget;
  r.uHistory.resize(T_, ut.size());
  r.vHistory.resize(T_, vt.size());
  r.errorHistory.assign(size_t(T_), MarginalErrors{});
  // Accumulated centring shift c: the raw (never-centred) potentials are (ut + c, vt − c). Those are the
  // ones written out (docs/conventions.md#duals); −inf stays −inf.
  T gauge = 0;
  for (int t = 1; t <= T_ + 1; ++t) {
    feedback.throwIfCanceled();
    if (t % 2 == 1) {
      const Vec<T> R = X.rowLogSumExp(vt);  // row sums of plan t−1 are scale·exp(ut + R)
      if (t > 1) {
        const SideError e = sideError<T>(sums(ut, R), r.rowTarget);
        r.errorHistory[size_t(t - 2)].rowMax = e.max;
        r.errorHistory[size_t(t - 2)].rowMean = e.mean;
      }
      if (t > T_) break;
      ut = closure(logMu, R);  // row closure: source c-transform of v
      const SideError e = sideError<T>(sums(ut, R), r.rowTarget);
      r.errorHistory[size_t(t - 1)].rowMax = e.max;
      r.errorHistory[size_t(t - 1)].rowMean = e.mean;
    } else {
      const Vec<T> C = X.colLogSumExp(ut);  // column sums of plan t−1 are scale·exp(vt + C)
      if (t > 1) {
        const SideError e = sideError<T>(sums(vt, C), r.colTarget);
        r.errorHistory[size_t(t - 2)].colMax = e.max;
        r.errorHistory[size_t(t - 2)].colMean = e.mean;
      }
      if (t > T_) break;
      vt = closure(logNu, C);  // column closure: key c-transform of u
      const SideError e = sideError<T>(sums(vt, C), r.colTarget);
      r.errorHistory[size_t(t - 1)].colMax = e.max;
      r.errorHistory[size_t(t - 1)].colMean = e.mean;
      if (t / 2 <= options.centredFullSteps) {
        // Gauge (u − m, v + m) with m the mean of active u: the plan is unchanged, potentials stay O(1).
        const auto active = (ut.array() != negInf);
        const T m = active.any() ? active.select(ut.array(), T(0)).sum() / T(active.count()) : T(0);
        ut = active.select(ut.array() - m, negInf).matrix();
        vt = (vt.array() != negInf).select(vt.array() + m, negInf).matrix();
        gauge += m;
      }
    }
    r.uHistory.row(t - 1) = (eps * (ut.array() + gauge)).transpose();
    r.vHistory.row(t - 1) = (eps * (vt.array() - gauge)).transpose();
    feedback.setProgress(double(t) / T_, options.stage);
  }
  r.u = (eps * (ut.array() + gauge)).matrix();
  r.v = (eps * (vt.array() - gauge)).matrix();
  r.errors = r.errorHistory.back();
}

}  // namespace tl
