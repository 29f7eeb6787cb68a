#pragma once
// The feature families of the ASAP paper's design ablation (Table F.3; docs/operators/asap.md#feature-families):
// what the columns of Φ are, one column per slice θ_l, all centred over the active queries.
//   potentials         Π f^θ, the sliced 1-D Kantorovich potentials (the paper's ASAP; the default)
//   raw                Π x^θ, the raw centred query projections
//   rank-displacement  Π(T^θ(x^θ) − x^θ), the monotone 1-D displacement (our definition; the paper's is lost)
//   predict-both       the potentials for f̂, and the key-side potentials Π g^θ for a second regression ĝ; the
//                      plan is P(f̂, ĝ) with no c-transform (so neither marginal is exact)
#include <optional>
#include <string>

#include "common/matrix.h"

namespace tl {

enum class AsapFeatures { Potentials, Raw, RankDisplacement, PredictBoth };

AsapFeatures parseAsapFeatures(const std::string& text);  // InvalidArgument naming the four values
const char* asapFeaturesName(AsapFeatures features);
// Whether the family regresses the key dual too (and so has a second coefficient vector, β_g).
inline bool predictsBothDuals(AsapFeatures features) { return features == AsapFeatures::PredictBoth; }

// Φ (n_q × L) of the family; predict-both uses the sliced potentials here. Masking as slicedFeatures: the
// 1-D problems are active queries against active keys, padded queries get the family's extension to any
// point (convex extension, raw projection, T(z) − z), centring is over active queries.
MatD sourceFeatures(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens,
                    AsapFeatures features);

// Ψ (n × L) of predict-both: column l = the key potential g^θ_l of the monotone matching on each key, centred
// over the active keys; 0 on padded keys (their ν is 0). Square self-attention only: InvalidArgument when
// n_q ≠ n_k.
MatD keyPotentialFeatures(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens);

}  // namespace tl
