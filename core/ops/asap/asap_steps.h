#pragma once
// The steps of ASAP that its CPU reference (asap.cpp) and its device path (asap_device.cpp) share: the
// predicted source dual and the cut of a given dual to the valid tokens.
#include <optional>

#include "common/attention_input.h"
#include "ops/asap/asap.h"
#include "ops/plan_result.h"

namespace tl {

// u0 in score coordinates (docs/operators/asap.md#closures): Φβ − a from the compiled layer, recording the
// sliced features Φ as the extra `asap_features` of `result`; or the given dual. InvalidArgument when the
// files do not fit the input.
template <class T>
Vec<T> asapSourceDual(const AttentionInput<T>& input, const AsapParams& params, const std::optional<Mask>& keyMask,
                      PlanResult<T>& result);

// For mask_mode=subsequence: a full-length given dual cut down to the valid tokens (other params unchanged).
AsapParams asapParamsOnValid(const AsapParams& params, const Mask& mask);

}  // namespace tl
