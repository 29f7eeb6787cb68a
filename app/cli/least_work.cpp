#include "least_work.h"

#include <algorithm>

#include "common/params.h"

namespace tl::cli {
namespace {

// Entries of the band |i − j| ≤ W of an n × n matrix.
double bandEntries(double n, double halfWidth) {
  const double w = std::min(halfWidth, n - 1);
  return n * (2 * w + 1) - w * (w + 1);
}

}  // namespace

std::optional<LeastWork> leastWork(const OperatorSpec& spec, int tokens, int features) {
  const double n = tokens, d = features, entries = n * n;
  const ParamSet& p = spec.params;
  // Every dense family forms the scores QKᵀ and the output A·V: n·n·d multiply-adds each.
  const double denseProducts = 2 * entries * d;
  if (spec.family == "softmax") return LeastWork{entries, 0, denseProducts};  // the plan's entries give both sums
  if (spec.family == "diff") return LeastWork{2 * entries, 0, denseProducts};  // two maps on half the features
  if (spec.family == "sinkhorn") {
    // One pass per row half-step, ⌊T/2⌋ + 1 with the one that gives the final plan's open marginal, and the plan:
    // a column half-step's sums come from the row pass before it (docs/operators/sinkhorn.md#complexity).
    return LeastWork{double(getInt(p, "T") / 2 + 2) * entries, 0, denseProducts};
  }
  if (spec.family == "asap") {
    if (getOptionalString(p, "compiled")) return std::nullopt;  // variant and features come from the file
    // Closures: the key side from the predicted dual (asap0), or the constant of predict-both: one pass; two-sided
    // adds the query side, whose pass also gives the last column closure. Then the plan. The sliced features,
    // O(n·L·d), are left out: L/n of the products.
    const bool onePass = getString(p, "variant") == "asap0" || getString(p, "features") == "predict-both";
    return LeastWork{(onePass ? 2 : 3) * entries, 0, denseProducts};
  }
  if (spec.family == "esp") {
    if (getString(p, "sort") != "hard") return std::nullopt;  // SoftSort's O(n²) per slice has no such count
    const std::string slicer = getString(p, "slicer");
    const long long given = getInt(p, "L");
    if (slicer == "file" && given == 0) return std::nullopt;  // L is the file's row count
    const double slices = given == 0 ? d : double(given);
    // Projections of queries and keys (none for the axis slicer: they are the coordinates), one matched pair's
    // cost per query and slice, and the output by gathers; no exponential of n × n; the dense plan written once.
    // Sorting is not counted: the floor has no unit for it, so ESP's ratio includes its sorts.
    const double projections = slicer == "axis" ? 0 : 2 * slices * n * d;
    return LeastWork{0, entries, projections + 2 * slices * n * d};
  }
  if (spec.family == "lot") {
    const double rank = std::min<double>(double(getInt(p, "r")), n), budget = double(getInt(p, "T"));
    // Two n × r problems of T half-steps each, and their plans; costs to the pivots and the output through the
    // factors (n·r·d each way); the dense plan P1·diag(1/w)·P2 (n·n·r) written once. k-means pivots are left
    // out: their Lloyd iterations depend on the data.
    return LeastWork{2 * (budget + 1) * n * rank, entries, 4 * n * rank * d + entries * rank};
  }
  if (spec.family == "banded") {
    if (getBool(p, "dustbin")) return std::nullopt;  // the dustbin's row and column make the support dense
    const double band = bandEntries(n, double(getInt(p, "W")));
    const long long steps = getInt(p, "base_steps") + getInt(p, "tail_steps");
    // Sinkhorn's count on the band (2·steps half-steps), its scores and output, and the dense plan written once.
    return LeastWork{double(steps + 2) * band, entries, 2 * band * d};
  }
  return std::nullopt;
}

}  // namespace tl::cli
