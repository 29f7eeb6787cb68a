#pragma once
// mask_mode=subsequence for any operator: run on the valid tokens only, then scatter the result back
// into full size with zero plan rows/columns, zero output rows and -inf duals at padded positions. A
// structured plan (ops/transport_plan.h) stays structured.
// Family extras keep the shape the family gave them on the valid tokens (their rows need not be tokens).
#include <functional>
#include <vector>

#include "common/attention_input.h"
#include "ops/plan_result.h"

namespace tl {

template <class T>
using PlanFunction = std::function<PlanResult<T>(const AttentionInput<T>&)>;

// Without a mask (or with every token valid) this simply calls `run(input)`.
template <class T>
PlanResult<T> runOnValidSubsequence(const AttentionInput<T>& input, const PlanFunction<T>& run);

// Building blocks for family extras that must be widened to the full sequence.
std::vector<Eigen::Index> validIndices(const Mask& mask);
template <class T>
Mat<T> takeRows(const Mat<T>& m, const std::vector<Eigen::Index>& rows);
// Rows of `sub` at positions `rows` of an n-row matrix; `fill` elsewhere.
template <class T>
Mat<T> scatterRows(const Mat<T>& sub, const std::vector<Eigen::Index>& rows, Eigen::Index n, T fill = T(0));

}  // namespace tl
