#pragma once
// The pieces of the banded forward that the CPU reference (banded.cpp) and the device path
// (banded_device.h) share, so both build the same system and report the same fields. Internal to
// core/ops/banded.
#include <utility>

#include "common/attention_input.h"
#include "ops/banded/banded.h"
#include "ops/plan_result.h"
#include "ops/score_geometry.h"

namespace tl::banded {

// docs/operators/banded.md#dustbin: one dustbin token per side (zero query, key and value: a neutral "null"
// token, since the tool has no learned ones) appended after the real tokens.
template <class T>
AttentionInput<T> withDustbin(const AttentionInput<T>& in);

// Unit targets on the band's active tokens (docs/operators/banded.md#definition), −inf on the others: log
// marginals in transport scale, attention scale n_q.
template <class T>
std::pair<Vec<T>, Vec<T>> logMarginals(Eigen::Index nq, Eigen::Index nk, Eigen::Index halfWidth);

// After the loop: the per-tile errors from the final plan's sums (system sizes), and with a dustbin its masses
// (from X, the system's band, and the final potentials ut, vt in eps units), the real tokens' duals, histories
// and targets. `r` holds the loop's fields for the system.
template <class T>
void finishResult(const BandedParams& p, const BandScores<T>* X, const Vec<T>& ut, const Vec<T>& vt, T scale,
                  Eigen::Index realQueries, Eigen::Index realKeys, const Vec<T>& rowSums, const Vec<T>& colSums,
                  PlanResult<T>& r);

}  // namespace tl::banded
