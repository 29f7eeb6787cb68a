#pragma once
// mask_mode=subsequence for any operator: run on the valid tokens only, then scatter the result back
// into full size with zero plan rows/columns, zero output rows and -inf duals at padded positions.
// Family extras keep the shape the family gave them on the valid tokens (their rows need not be tokens).
#include <functional>

#include "common/attention_input.h"
#include "ops/plan_result.h"

namespace tl {

template <class T>
using PlanFunction = std::function<PlanResult<T>(const AttentionInput<T>&)>;

// Without a mask (or with every token valid) this simply calls `run(input)`.
template <class T>
PlanResult<T> runOnValidSubsequence(const AttentionInput<T>& input, const PlanFunction<T>& run);

}  // namespace tl
