#pragma once
// What a hard ESP result is made of, shared by the CPU reference (esp.cpp) and the device path
// (esp_device.cpp): Q and K as ESP compares them, and the result from its slices (docs/operators/esp.md#outputs).
#include <utility>
#include <vector>

#include "common/attention_input.h"
#include "ops/esp/esp_params.h"
#include "ops/esp/esp_slice.h"
#include "ops/plan_result.h"

namespace tl {

// Q and K as ESP sees them: pre-scaled by d^{-1/2} under compat=reference-code
// (docs/operators/esp.md#compat).
template <class T>
std::pair<Mat<T>, Mat<T>> espQueriesAndKeys(const AttentionInput<T>& in, const EspParams& p);

// The hard result of n_q queries and n_k keys from its slices and their costs D_l: the plan A = n_q·Σ_l w_l U_l
// as a SlicedPlan (nothing n×n), w = sliceWeights(D, tau), targets and marginal errors, and the extras
// esp_weights, esp_costs, esp_directions (theta), esp_matchings and esp_ties. No output.
template <class T>
PlanResult<T> hardEspResult(std::vector<HardSlice> slices, const Vec<T>& costs, const Mat<T>& theta, double tau,
                            Eigen::Index nq, Eigen::Index nk);

// Targets in attention scale (docs/operators/esp.md#unequal-sizes: rows 1, columns n_q/n_k) and the plan's
// marginal errors against them.
template <class T>
void setEspTargetsAndErrors(PlanResult<T>& r);

// After a run on the valid tokens (mask_mode=subsequence): esp_matchings index valid tokens; map them back to
// token indices, -1 at padded queries.
template <class T>
void widenEspMatchings(PlanResult<T>& r, const Mask& mask);

}  // namespace tl
