#pragma once
// ASAP online operator (docs/operators/asap.md#definition, #closures): a source dual predicted from sliced
// 1-D potentials, f̂ = Φ(Q,K)·β (cost units, centred), shifted to score coordinates u0 = f̂
// − a (a_i = ‖q_i‖²/(2√d)), then entropic c-transforms in score coordinates:
//   asap0              : v1 = key closure of u0;                       plan P(u0, v1)   (exact columns)
//   two-sided, column  : v1, u1 = source closure of v1, v2 = key closure of u1; plan P(u1, v2)
//   two-sided, row     : v1, u1;                                        plan P(u1, v1)   (exact rows)
// Instead of slices + beta, `dual` gives u0 directly (score coordinates, e.g. the u.npy `tlens plan`
// writes for a Sinkhorn teacher): then a column-ending teacher's final u gives its plan back with asap0,
// and the plan of Sinkhorn with T+2 with two-sided (docs/operators/asap.md#teacher-duals).
#include <optional>
#include <string>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

enum class AsapVariant { Asap0, TwoSided };
enum class Closing { Column, Row };

struct AsapParams {
  AsapVariant variant = AsapVariant::TwoSided;
  Closing closing = Closing::Column;
  double eps = 1.0;
  MaskMode maskMode = MaskMode::Subsequence;
  // Either the compiled layer (slices L×d, beta L) or a source dual (n) in score coordinates.
  std::optional<MatD> slices;
  std::optional<VecD> beta;
  std::optional<VecD> dual;

  // Reads the files named by `slices`, `beta`, `dual`; checks shapes against each other.
  static AsapParams from(const ParamSet& params);
};

template <class T>
PlanResult<T> asapAttention(const AttentionInput<T>& input, const AsapParams& params,
                            Feedback& feedback = noFeedback());

void registerAsap(OperatorRegistry& registry);

}  // namespace tl
