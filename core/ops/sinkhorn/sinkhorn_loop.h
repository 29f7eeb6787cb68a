#pragma once
// The one log-domain Sinkhorn loop (docs/operators/sinkhorn.md#definition), over any score geometry
// (score_geometry.h): dense Sinkhorn and banded Sinkhorn differ only in their support and their marginals.
//
// Potentials are kept in eps units (ut = u/eps, vt = v/eps) so each half-step is one log-sum-exp over X.
// Marginal errors after step t need the sums of both sides of plan t. The closing side comes from step t's
// own log-sum-exp; the other side is exactly what step t+1 computes (its LSE at the old potential), so the
// loop runs one extra half-step without updating to get the last plan's open side: T+1 half-steps in all. A row
// half-step and the column half-step after it come from one call, X.rowClosurePass (on dense scores one pass
// over X for both, log_domain.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/feedback.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/plan_result.h"

namespace tl {

// The loop's state after `steps` single normalisations: the potentials and what was recorded so far. A run
// with a larger budget on the same scores and marginals continues from it and takes exactly the steps a fresh
// run takes after `steps`, so its result is bit for bit the fresh one (ops/sinkhorn/sinkhorn_cache.h).
template <class T>
struct SinkhornLoopState {
  int steps = 0;                               // 0: nothing to continue from
  Vec<T> ut, vt;                               // potentials in eps units after `steps`
  Mat<T> uHistory, vHistory;                   // their first `steps` rows
  std::vector<MarginalErrors> errorHistory;    // its first `steps` entries
};

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
    // The exponentials first, as packets (a select around them would take one scalar exp per token).
    const Eigen::Array<T, Eigen::Dynamic, 1> mass = scale * exactExp(logMarginal.array());
    return (logMarginal.array() == negInf).select(T(0), mass).matrix();
  };
  r.rowTarget = targetOf(logMu);
  r.colTarget = targetOf(logNu);
  r.massMismatch = std::abs(double(r.rowTarget.sum() - r.colTarget.sum())) > 1e-6 * double(r.rowTarget.size());
}

namespace sinkhorn_loop {

template <class T>
constexpr T negInf = -std::numeric_limits<T>::infinity();

// The potential a loop starts from: 0 on active tokens, −inf on inactive ones (log marginal −inf).
template <class T>
Vec<T> startingPotential(const Vec<T>& logMarginal) {
  return (logMarginal.array() == negInf<T>).select(negInf<T>, Vec<T>::Zero(logMarginal.size())).matrix();
}

using tl::closure;  // potential = log marginal − LSE, −inf on inactive tokens (log_domain.h)

// One side's sums of the plan scale·exp(X + ut ⊕ vt) from its potential and the LSE over the other side: the
// marginal of that side without a pass over the plan (0 on inactive tokens).
template <class T>
Vec<T> marginalSums(const Vec<T>& potential, const Vec<T>& lse, T scale) {
  // The exponentials first, as packets (a select around them would take one scalar exp per token).
  const Eigen::Array<T, Eigen::Dynamic, 1> sums = scale * exactExp((potential + lse).array());
  return (potential.array() == negInf<T>).select(T(0), sums).matrix();
}

constexpr Eigen::Index kTokenBlock = 256;  // tokens per block of a side's bookkeeping: its buffers stay in L1

// Max and sum of a side's |sums − target|, block by block, in double.
struct ErrorAccumulator {
  double max = 0, sum = 0;
  // Adds tokens [first, first + len) of the plan scale·exp(potential + lse) (0 on inactive tokens: potential
  // −inf): the exponentials as packets, and no select (Eigen's runs a token at a time).
  template <class T>
  void add(const Vec<T>& potential, const Vec<T>& lse, const Vec<T>& target, Eigen::Index first, Eigen::Index len,
           T scale) {
    Eigen::Array<T, kTokenBlock, 1> sums;
    Eigen::Array<double, kTokenBlock, 1> deviation;
    sums.head(len) = scale * exactExp(potential.segment(first, len).array() + lse.segment(first, len).array());
    for (Eigen::Index i = 0; i < len; ++i)
      if (potential(first + i) == negInf<T>) sums(i) = T(0);
    deviation.head(len) = (sums.head(len) - target.segment(first, len).array()).abs().template cast<double>();
    max = std::max(max, deviation.head(len).maxCoeff());
    sum += deviation.head(len).sum();
  }
  void store(MarginalErrors& errors, double MarginalErrors::*maxField, double MarginalErrors::*meanField,
             Eigen::Index tokens) const {
    errors.*maxField = max;
    errors.*meanField = tokens > 0 ? sum / double(tokens) : 0;
  }
};

// One side of the problem (rows or columns): its potential, log marginal and target, and the two fields of
// MarginalErrors it fills. Row and column half-steps are the same code on different sides.
template <class T>
struct Side {
  Vec<T>& potential;
  const Vec<T>& logMarginal;
  const Vec<T>& target;
  double MarginalErrors::*max;
  double MarginalErrors::*mean;

  // This side's error of the plan scale·exp(X + ut ⊕ vt), given the LSE over the other side.
  void recordError(MarginalErrors& errors, const Vec<T>& lse, T scale) const {
    ErrorAccumulator e;
    for (Eigen::Index first = 0; first < potential.size(); first += kTokenBlock)
      e.add(potential, lse, target, first, std::min(kTokenBlock, potential.size() - first), scale);
    e.store(errors, max, mean, potential.size());
  }
  // The half-step on this side from the LSE over the other, in one pass over the tokens (a half-step's own work
  // is O(n) beside the pass over the scores, and at n = 1024 on a band, separate passes with their buffers took
  // as long as the band's pass): the previous plan's error on this side (its open side) into `previous` when
  // given, the potential's closure (the row closure is the c-transform of v, the column closure that of u), and
  // the new plan's error (its closed side) into `current`.
  void close(const Vec<T>& lse, T scale, MarginalErrors* previous, MarginalErrors& current) const {
    ErrorAccumulator before, after;
    const Eigen::Index n = potential.size();
    for (Eigen::Index first = 0; first < n; first += kTokenBlock) {
      const Eigen::Index len = std::min(kTokenBlock, n - first);
      if (previous) before.add(potential, lse, target, first, len, scale);
      for (Eigen::Index i = first; i < first + len; ++i) potential(i) = closedPotential(logMarginal(i), lse(i));
      after.add(potential, lse, target, first, len, scale);
    }
    if (previous) before.store(*previous, max, mean, n);
    after.store(current, max, mean, n);
  }
};

// Gauge (u − m, v + m) with m the mean of active u: the plan is unchanged, potentials stay O(1). Returns m. Plain
// loops (Eigen's select and any() run a token at a time); −inf ± m stays −inf.
template <class T>
T centre(Vec<T>& ut, Vec<T>& vt) {
  T total = 0;
  Eigen::Index active = 0;
  for (Eigen::Index i = 0; i < ut.size(); ++i)
    if (ut(i) != negInf<T>) {
      total += ut(i);
      ++active;
    }
  const T m = active > 0 ? total / T(active) : T(0);
  ut.array() -= m;
  vt.array() += m;
  return m;
}

}  // namespace sinkhorn_loop

// logMu / logNu: log marginals in transport scale (−inf = inactive token: its potential stays −inf and
// it carries no mass). The attention plan is scale · exp(X + ut ⊕ vt). Fills duals, histories, errors and
// targets of `r`; the caller forms the plan (dense or structured). `resume`, when given, is this loop's state
// after at most `options.budget` steps on the same X and marginals, without centring: the loop goes on from it.
template <class T, class Geometry>
void runSinkhornLoop(const Geometry& X, const Vec<T>& logMu, const Vec<T>& logNu, T eps, T scale,
                     const SinkhornLoopOptions& options, Feedback& feedback, PlanResult<T>& r, Vec<T>& ut, Vec<T>& vt,
                     const SinkhornLoopState<T>* resume = nullptr) {
  using namespace sinkhorn_loop;
  const int budget = options.budget;
  const int done = resume ? resume->steps : 0;
  if (done > budget || (done > 0 && options.centredFullSteps > 0))
    throw InvalidArgument("a Sinkhorn loop continues only from fewer steps, without centring");
  setMarginalTargets(logMu, logNu, scale, r);
  ut = done > 0 ? resume->ut : startingPotential(logMu);
  vt = done > 0 ? resume->vt : startingPotential(logNu);
  const Side<T> rows{ut, logMu, r.rowTarget, &MarginalErrors::rowMax, &MarginalErrors::rowMean};
  const Side<T> cols{vt, logNu, r.colTarget, &MarginalErrors::colMax, &MarginalErrors::colMean};

  r.uHistory.resize(budget, ut.size());
  r.vHistory.resize(budget, vt.size());
  r.errorHistory.assign(size_t(budget), MarginalErrors{});
  if (done > 0) {
    r.uHistory.topRows(done) = resume->uHistory.topRows(done);
    r.vHistory.topRows(done) = resume->vHistory.topRows(done);
    std::copy_n(resume->errorHistory.begin(), done, r.errorHistory.begin());
  }
  // Accumulated centring shift c: the raw (never-centred) potentials are (ut + c, vt − c). Those are the
  // ones written out (docs/conventions.md#duals); −inf stays −inf.
  T gauge = 0;
  // A row step's pass over X also gives the next column step's LSE over the u it sets (X.rowClosurePass, one
  // pass for both half-steps); it waits here for that step.
  std::optional<Vec<T>> nextColumnLse;
  // Step done + 1 first recomputes the open side of plan `done`: the same numbers the run that stopped there
  // recorded.
  for (int t = done + 1; t <= budget + 1; ++t) {
    feedback.throwIfCanceled();
    const bool rowStep = t % 2 == 1;  // rows first: odd t normalises rows, even t columns
    const Side<T>& side = rowStep ? rows : cols;
    // This side's sums of plan t−1 are scale·exp(potential + lse): the open side of the previous step.
    Vec<T> lse;
    if (rowStep && t <= budget) {
      RowClosurePass<T> pass = X.rowClosurePass(vt, logMu);
      lse = std::move(pass.rowLse);
      nextColumnLse = std::move(pass.colLse);
    } else if (rowStep) {
      lse = X.rowLogSumExp(vt);  // the last plan's open side only
    } else {
      // Continuing after a row step (resume): that step's pass again, from the same vt, gives the same numbers.
      lse = nextColumnLse ? std::move(*nextColumnLse) : X.rowClosurePass(vt, logMu).colLse;
      nextColumnLse.reset();
    }
    if (t > budget) {
      if (t > 1) side.recordError(r.errorHistory[size_t(t - 2)], lse, scale);
      break;
    }
    side.close(lse, scale, t > 1 ? &r.errorHistory[size_t(t - 2)] : nullptr, r.errorHistory[size_t(t - 1)]);
    if (!rowStep && t / 2 <= options.centredFullSteps) gauge += centre(ut, vt);
    r.uHistory.row(t - 1) = (eps * (ut.array() + gauge)).transpose();
    r.vHistory.row(t - 1) = (eps * (vt.array() - gauge)).transpose();
    feedback.setProgress(double(t) / budget, options.stage);
  }
  r.u = (eps * (ut.array() + gauge)).matrix();
  r.v = (eps * (vt.array() - gauge)).matrix();
  r.errors = r.errorHistory.back();
}

}  // namespace tl
