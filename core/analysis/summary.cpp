#include "analysis/summary.h"

#include <algorithm>

#include "analysis/plan_distance.h"

namespace tl {

PlanAnalysis analyzePlan(const PlanResult<double>& result, double roundoff) {
  PlanAnalysis a;
  a.errors = result.errors;
  a.massMismatch = result.massMismatch;
  a.entropy = rowEntropy(result.plan);
  a.columnMass = columnMass(result.plan, result.colTarget);
  if (std::min(result.plan.rows(), result.plan.cols()) <= kMaxRankSize) a.rank = planRank(result.plan, roundoff);
  a.seconds = result.seconds;
  return a;
}

PlanComparison comparePlans(const PlanResult<double>& a, const PlanResult<double>& reference) {
  PlanComparison c;
  c.relativeFrobenius = relativeFrobenius(a.plan, reference.plan);
  c.maxAbs = maxAbsDifference(a.plan, reference.plan);
  c.meanRowKl = meanRowKl(a.plan, reference.plan);
  if (a.output && reference.output) c.outputDifference = relativeFrobenius(*a.output, *reference.output);
  return c;
}

}  // namespace tl
