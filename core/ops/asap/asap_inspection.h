#pragma once
// Everything the GUI's ASAP view draws for one input (docs/gui.md#asap-view): the Sinkhorn teacher on that
// input, a sliced-potential fit of its dual on that input alone (docs/operators/asap.md#fitting), the fit's R²
// and δ, the features Φ, and the teacher, two-sided ASAP and ASAP-0 plans; and, for one slice θ, the 1-D
// problem behind its feature column (docs/operators/asap.md#features); the short-budget Sinkhorn baselines T_b = 1
// and 3; the Sinkhorn trajectory started cold and warm from ASAP's predicted dual; the plans' row and column sums
// and ASAP's row-error bound η (docs/operators/asap.md#bounds). Small by design: one instance, a few dozen
// slices, so a view can refit it whenever a slider moves. The costlier sweep over the number of slices (R² and
// the KL diagnostics) is sweepSlices, run after it.
#include <cstdint>
#include <optional>
#include <vector>

#include "common/attention_input.h"
#include "ops/asap/asap.h"
#include "ops/asap/asap_bounds.h"
#include "ops/asap/asap_fit.h"
#include "ops/sinkhorn/sinkhorn.h"

namespace tl {

struct AsapInspectionSettings {
  SinkhornParams teacher;  // the teacher's budget T ≥ 2, eps and mask mode
  int L = 16;              // slices: the first L rows of the seeded random bank (slicers.h), so more slices add rows
  uint64_t seed = 0;
  double lambdaB = 1e-4;   // ridge on the normalised risk
  FitKind fit = FitKind::Ls;
};

// Row and column sums of an attention-scale plan A = n·P: 1 on balanced tokens, 0 on padded ones.
struct PlanMarginals {
  VecD rows, cols;
};
PlanMarginals planMarginals(const MatD& plan);

// The fit refitted with the first L slices, for each L of `slices`, on the same input, λ_B and fit kind
// (docs/gui.md#asap-view): the dual fit's R² and the KL diagnostics between the teacher's one-sided plan
// P(u^T, K(u^T)) and ASAP-0's P(Φβ − a, K(·)), with their bounds (asap_bounds.h). The LS surrogate (B.70) is
// κ/(2ε²)·R̂(β) with one κ for every pair of the sweep (the largest), as B.12 assumes; B.54 uses each pair's
// own κ, so on one input the two differ only in κ, and the surrogate is proportional to the risk R̂ that the
// LS fit minimises.
struct SliceSweep {
  std::vector<int> slices;  // ascending
  std::vector<double> r2, residualMeanSquare;
  std::vector<OneSidedKl> kl;
  double kappa = 0;  // the largest κ of the sweep
  std::vector<double> lsSurrogate;
};

struct AsapInspection {
  AsapInspectionSettings settings;
  Closing closing = Closing::Column;  // the teacher's last step: column for even T, row for odd T
  MatD slices;                         // L × d
  VecD beta;                           // L
  FitQuality quality;                  // R², δ = ‖f̂ − f̄‖∞ over the tokens in use
  // Per token in use (valid tokens under subsequence masking), in cost units and centred: the fitted dual
  // f̂ = Φβ and the teacher's f̄.
  VecD fitted, target;
  MatD phi;  // Φ, tokens in use × L
  // Attention-scale plans A = n·P on the whole input (padded rows and columns 0), their marginal errors, and
  // the ASAP plans' distance to the teacher's, ‖A − A^T‖_F/‖A^T‖_F.
  MatD teacherPlan, asapPlan, asap0Plan;
  MarginalErrors teacherErrors, asapErrors, asap0Errors;
  double asapRelativeError = 0, asap0RelativeError = 0;
  // The frozen-layer baselines (docs/operators/asap.md#frozen-layer-evaluation): Sinkhorn with T_b = 1 and 3 at
  // the teacher's eps, [0] for T_b = 1 and [1] for T_b = 3.
  MatD shortPlans[2];
  MarginalErrors shortErrors[2];
  double shortRelativeErrors[2] = {0, 0};
  // The Sinkhorn trajectory with ASAP as a warm start (docs/operators/asap.md#warm-start): the largest row or
  // column error (attention scale) after each of the first kTrajectorySteps single normalisations of the
  // teacher's problem, started cold (u = v = 0, rows first, as the teacher) and warm (u = the predicted dual
  // Φβ − a, columns first, as ASAP's closures: step 1 is ASAP-0, step 3 two-sided ASAP with column closing).
  // On the tokens in use; empty under keep-queries padding.
  static constexpr int kTrajectorySteps = 12;
  std::vector<double> coldStartErrors, warmStartErrors;

  // The B.34 row-error bound of two-sided ASAP (asap_bounds.h), on the tokens in use: every ASAP row sum of
  // A lies in 1 ± η. Only for column closing (row closing makes rows exact), and not under keep-queries padding.
  std::optional<TwoSidedRowBound> rowBound;

  // Plan ratios P^ASAP-0 / P^teacher lie in [1/bound, bound] with bound = e^{2δ/eps} (dual stability, B.8).
  double planRatioBound() const;
};

// InvalidArgument for a teacher with T < 2 (plain softmax: nothing to fit), L < 1, λ_B < 0, or an input with
// n_q ≠ n_k (the fit needs self-attention).
AsapInspection inspectAsap(const AttentionInput<double>& input, const AsapInspectionSettings& settings);

// The slice sweep for these settings on this input: slice counts 1, 2, 4, …, kSweepMaxSlices and settings.L (without
// a ridge only those up to tokens − 1, which the centred features can determine). A refit and a 33-point KL path
// per count, so the view runs it after drawing the fit. Empty under keep-queries padding (the bounds assume
// uniform marginals); InvalidArgument as inspectAsap.
constexpr int kSweepMaxSlices = 128;
SliceSweep sweepSlices(const AttentionInput<double>& input, const AsapInspectionSettings& settings);

// The 1-D optimal-transport problem along one slice θ (docs/operators/asap.md#features), on the tokens in use.
struct SliceInspection {
  VecD x, y;                             // projections ⟨θ, q_i⟩/d^{1/4} and ⟨θ, k_j⟩/d^{1/4}, token order
  std::vector<Eigen::Index> matchedKey;  // the monotone matching: query i ↔ key matchedKey[i] (equal ranks)
  VecD potential;                        // f^θ(x_i) (uncentred; Φ's column is this minus its mean)
  // The convex extension f^θ(z) and the piecewise-linear φ(z) = ½z² − f^θ(z) on a grid spanning x with a
  // margin, so the outer rays show.
  VecD grid, potentialCurve, interpolant;
};

// `slice` indexes the inspection's slices; InvalidArgument when out of range.
SliceInspection inspectSlice(const AttentionInput<double>& input, const AsapInspection& inspection, int slice);

}  // namespace tl
