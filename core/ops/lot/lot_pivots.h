#pragma once
// The LOT pivot (reference) measure σ = Σ_l w_l δ_{z_l} before its temperature: locations Z (r×d) and mass
// logits θ (r), w = softmax(θ/mass_temp) (docs/operators/lot.md#pivots). Where the pivots come from
// (`pivot_init`):
//  file     : Z from `pivots=PATH.npy` (r×d).
//  gaussian : Z ~ N(0, 1/d) (the paper's vision initialisation, docs/operators/lot.md#training)
//             and θ ~ N(0, 0.5²) (the distribution of the tests), both drawn from `seed`, Z first.
//  kmeans   : Z = k-means centres of the union of the (valid) queries and keys; θ = 0, i.e. uniform masses
//             (the paper's initialisation). k-means++ seeding from `seed`, then Lloyd iterations, so the
//             centres are a deterministic function of the tokens and the seed. The default: on synthetic or
//             checkpoint inputs without trained pivots it places the pivots where the tokens are.
// `mass_logits=PATH.npy` (r) replaces θ in every mode.
#include <cstdint>
#include <optional>
#include <string>

#include "common/feedback.h"
#include "common/matrix.h"

namespace tl {

// Auto: the pivots file when one is given, otherwise k-means (resolvedPivotInit).
enum class PivotInit { Auto, File, Gaussian, KMeans };

PivotInit parsePivotInit(const std::string& text);
const char* pivotInitName(PivotInit init);

struct LotPivots {
  MatD locations;   // Z, r×d
  VecD massLogits;  // θ, r
};

// Z ~ N(0, 1/d), θ ~ N(0, 0.25), from `seed` (Z row by row, then θ).
LotPivots gaussianPivots(int r, int d, uint64_t seed);

// k-means++ seeding then Lloyd iterations (ties go to the lower centre index) until no point changes
// cluster, at most kMaxLloydIterations. An empty cluster keeps its centre. Needs r ≤ points.rows(). The last
// result is kept: the same points (byte for byte), r and seed return it without recomputing (slider moves).
MatD kmeansCentres(const MatD& points, int r, uint64_t seed, Feedback& feedback = noFeedback());
constexpr int kMaxLloydIterations = 100;

// Reads an r×d pivot file, checking r; and an r-long logits file (1-D, r×1 or 1×r). FileError when a
// file cannot be read, InvalidArgument naming the file when its shape or values are wrong.
MatD readPivotLocations(const std::string& path, int r);
VecD readMassLogits(const std::string& path, int r);

// Checks given pivots against r and the head dimension d (finite values, Z r×d, θ of length r).
void validatePivots(const LotPivots& pivots, int r, int d);

// log w = log_softmax(θ/mass_temp) (docs/operators/lot.md#definition: compute log w directly). Throws
// InvalidArgument when a mass underflows to 0 in precision T (the logit range divided by mass_temp is too
// wide).
template <class T>
Vec<T> logPivotMasses(const VecD& massLogits, double massTemp);

}  // namespace tl
