#pragma once
// ASAP online operator (docs/operators/asap.md#definition, #closures): a source dual predicted from sliced
// 1-D potentials, f̂ = Φ(Q,K)·β (cost units, centred), shifted to score coordinates u0 = f̂
// − a (a_i = ‖q_i‖²/(2√d)), then entropic c-transforms in score coordinates:
//   asap0              : v1 = key closure of u0;                       plan P(u0, v1)   (exact columns)
//   two-sided, column  : v1, u1 = source closure of v1, v2 = key closure of u1; plan P(u1, v2)
//   two-sided, row     : v1, u1;                                        plan P(u1, v1)   (exact rows)
// The feature family (docs/operators/asap.md#feature-families) picks the columns of Φ; features=predict-both
// also predicts the key dual ĝ = Ψβ_g (β_g from `key_beta`), v0 = ĝ − b, and its plan is P(u0, v0 + κ) with no
// closure: κ only sets the total mass to Σν, so neither marginal is exact (variant and closing do not apply).
// Instead of slices + beta, `dual` gives u0 directly (score coordinates, e.g. the u.npy `tlens plan`
// writes for a Sinkhorn teacher): then a column-ending teacher's final u gives its plan back with asap0,
// and the plan of Sinkhorn with T+2 with two-sided (docs/operators/asap.md#teacher-duals).
#include <optional>
#include <string>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/param_bindings.h"
#include "ops/asap/feature_families.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

enum class AsapVariant { Asap0, TwoSided };
enum class Closing { Column, Row };

AsapVariant parseAsapVariant(const std::string& text);  // "two-sided" | "asap0"
const char* asapVariantName(AsapVariant variant);
Closing parseClosing(const std::string& text);  // "column" | "row"
const char* closingName(Closing closing);
// Entropic closures after u0: asap0 one (v1); two-sided row closing two (v1, u1), column closing three
// (v1, u1, v2).
int asapClosures(AsapVariant variant, Closing closing);

struct AsapParams {
  AsapVariant variant;
  Closing closing;
  double eps;
  MaskMode maskMode;
  // Either the compiled layer (slices L×d, beta L) or a source dual (n) in score coordinates, read from the
  // files the `slices`, `beta`, `dual` parameters name (io/npy_cache.h).
  std::optional<MatD> slices;
  std::optional<VecD> beta;
  std::optional<VecD> dual;
  AsapFeatures features;        // of slices + beta; a compiled model's recorded family
  std::optional<VecD> keyBeta;  // β_g (length L), features=predict-both only
  // A compiled model's folder (docs/operators/asap.md#compiled-models) and the layer whose slices and β to
  // use; layer −1 means "the layer this operator is swapped into" (set by the model when it runs it).
  std::optional<std::string> compiled;
  int layer;

  AsapParams();  // the schema's defaults (no files)
  // Reads the files; checks that exactly one of dual, slices+beta or compiled is given and that their shapes
  // agree; a compiled layer sets slices, beta, its recorded feature family (and key_beta) and must have been
  // fitted at this eps.
  static AsapParams from(const ParamSet& resolved);
};
const ParamBindings<AsapParams>& asapParamBindings();

template <class T>
PlanResult<T> asapAttention(const AttentionInput<T>& input, const AsapParams& params,
                            Feedback& feedback = noFeedback());

void registerAsap(OperatorRegistry& registry);

}  // namespace tl
