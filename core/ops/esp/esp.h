#pragma once
// ESP attention (ESPFormer; docs/operators/esp.md#definition): per slice θ_l, sort the projected queries and
// keys, couple them by rank (a permutation when n_q = n_k), lift to a plan U_l, weight the slices by
// w = softmax(−tau·D_l) of their costs D_l = <C, U_l>, C_ij = ‖q_i − k_j‖^p, and return A = n_q·Σ_l w_l U_l.
//  sort=hard : exactly doubly stochastic (rows 1, columns n_q/n_k) for any weights, no iteration.
//  sort=soft : SoftSort sorting matrices (training relaxation, docs/operators/esp.md#soft-sorting); both
//              marginals are off at finite sort_temp and are reported as they are, with the distance to
//              the hard plan.
// Results carry the extras esp_weights, esp_costs (L×1), esp_directions (L×d), esp_matchings (L×n_q), esp_ties (L×1) and, in soft
// mode, esp_hard_distance (1×1); see EspExtras below.
#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/esp/esp_params.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

// Names of the extras (attention-scale results hold them as Mat<T>).
struct EspExtras {
  static constexpr const char* weights = "esp_weights";          // w_l, L×1
  static constexpr const char* directions = "esp_directions";    // θ_l, L×d unit slice directions
  static constexpr const char* costs = "esp_costs";              // D_l, L×1 (the soft D_l in soft mode)
  static constexpr const char* matchings = "esp_matchings";      // L×n_q key per query (HardSlice::matching);
                                                                 // -1 at padded queries
  static constexpr const char* ties = "esp_ties";                // L×1 tied tokens (docs/operators/esp.md#ties)
  static constexpr const char* hardDistance = "esp_hard_distance";  // soft only: max|A_soft − A_hard|, 1×1
};

// w = softmax(−tau·(D − min D)): the slice weights, computed stably (docs/operators/esp.md#definition);
// tau = 0 gives exactly 1/L.
template <class T>
Vec<T> sliceWeights(const Vec<T>& costs, double tau);

template <class T>
PlanResult<T> espAttention(const AttentionInput<T>& input, const EspParams& params,
                           Feedback& feedback = noFeedback());

// O = A·V for sort=hard without forming any n×n matrix: O(L·n·(log n + d + d_v)) by gathering V per slice
// (docs/operators/esp.md#lazy-path): espAttention's output, whose hard plan is a SlicedPlan. Needs V; padded
// rows of O are 0.
template <class T>
Mat<T> espLazyOutput(const AttentionInput<T>& input, const EspParams& params, Feedback& feedback = noFeedback());

void registerEsp(OperatorRegistry& registry);

}  // namespace tl
