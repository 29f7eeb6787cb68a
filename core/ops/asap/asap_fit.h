#pragma once
// Fitting the coefficients β of a compiled ASAP layer to a Sinkhorn teacher's duals
// (docs/operators/asap.md#fitting), in float64:
//   LS  β = argmin (1/n_rows) Σ ‖Φ_m β − f̄_m‖² + λ_B ‖β‖²   (streaming normal equations; Cholesky, or
//       column-pivoted QR when λ_B = 0); the implementation ridge of the stacked solve is λ = n_rows·λ_B,
//       n_rows = number of stacked regression rows over every head instance (docs/operators/asap.md#least-squares).
//   KL  J(β) = (1/N) Σ_m [ eps Σ_{j∈J} ν_j LSE_i((S_ij + (Φ_mβ)_i − a_i)/eps) − ⟨r_m, Φ_m β⟩ ] + (λ_B/2)‖β‖²
//       with r_m the row sums of the teacher's one-sided plan P(u, K(u)) (transport scale), minimised by
//       Newton with backtracking from the LS solution, L-BFGS as fallback, until ‖∇J‖ < 1e-8.
// Every head instance is one example m; N counts them all (layers pool their heads).
// The feature family (docs/operators/asap.md#feature-families) only changes Φ, except predict-both: it adds an
// LS fit of the centred key dual ḡ on the key-side potentials Ψ (β_g); KL is not defined for it.
#include <optional>
#include <string>
#include <vector>

#include "common/feedback.h"
#include "common/matrix.h"
#include "ops/asap/feature_families.h"
#include "ops/mask_mode.h"
#include "ops/score_geometry.h"

namespace tl {

// One head instance of the calibration set, as the teacher saw it.
struct FitInstance {
  MatD Q, K;  // n × d, unscaled (the operator scales by 1/√d)
  // The teacher's closure-ready source dual in score coordinates (docs/operators/asap.md#teacher-duals):
  // u after step T − 1 (column-ending) or T − 2 (row-ending); −inf on padded tokens under subsequence.
  VecD dual;
  std::optional<Mask> mask;  // valid tokens (self-attention padding)
};

// The arrays `tlens asap-fit` reads (docs/cli.md#asap-fit): Q and K [N, n, d], the teacher duals U [N, n], an
// optional mask [N, n] (1 valid, 0 padding). InvalidArgument naming the file whose shape does not fit;
// FileError for unreadable files.
std::vector<FitInstance> readFitInstances(const std::string& qPath, const std::string& kPath,
                                          const std::string& dualPath, const std::optional<std::string>& maskPath);

struct FitSettings {
  double eps = 1.0;  // the teacher's eps
  MaskMode maskMode = MaskMode::Subsequence;
  AsapFeatures features = AsapFeatures::Potentials;
};

// What one instance contributes, computed once: the scores, features and targets of the fit.
struct FitExample {
  DenseScores<double> X;  // S/eps
  double eps;
  VecD a;          // ‖q_i‖²/(2√d): score → cost coordinates
  MatD phi;        // Φ, n × L (docs/operators/asap.md#features)
  Mask lossRows;   // rows in the LS loss and in R² and δ (valid queries)
  VecD target;     // f̄ = u + a centred over lossRows (cost units); 0 elsewhere
  VecD logNu;      // log ν_j: −log n on valid keys, −inf on padded ones (keep-queries)
  VecD teacherRowMass;  // r = P(u, K(u))·1 in transport scale: the KL target
  // predict-both only: Ψ (n × L), and ḡ = v + b of the teacher's plan P(u, K(u)) centred over the valid keys
  // (cost units, b_j = ‖k_j‖²/(2√d)); the key loss rows are the valid keys (the same tokens as lossRows).
  MatD keyPhi;
  VecD keyTarget;
};

// Validates the instance (shapes, finite dual on the tokens in use) and computes its example. Under
// subsequence the padded tokens are dropped first; under keep-queries every query row stays (padded ones
// with the convex-extension features, outside the LS loss) and padded keys get ν = 0.
FitExample prepareFitExample(const FitInstance& instance, const MatD& slices, const FitSettings& settings);

// The plan ASAP predicts with β, in eps units: u = (Φβ − a)/eps and v = K(u) (exact columns).
VecD predictedSourceDual(const FitExample& example, const VecD& beta);  // Φβ − a, score coordinates

// ---- least squares -----------------------------------------------------------------------------------------

// Streaming normal equations: G = Σ Φᵀ Φ and h = Σ Φᵀ f̄ over the loss rows, in float64.
class LsAccumulator {
 public:
  explicit LsAccumulator(Eigen::Index L);
  void add(const FitExample& example);
  void add(const MatD& phi, const VecD& target, const Mask& lossRows);
  Eigen::Index rows() const { return rows_; }
  const MatD& gram() const { return G_; }
  const VecD& moment() const { return h_; }

 private:
  MatD G_;
  VecD h_;
  Eigen::Index rows_ = 0;
};

struct LsFit {
  VecD beta;
  double lambdaB = 0;  // ridge on the normalised risk (what the user sets)
  double lambda = 0;   // the same ridge in the stacked solve: n_rows·λ_B
  Eigen::Index rows = 0;
  std::string solver;  // "cholesky" or "qr"
};

// (G + λ I) β = h. λ_B = 0 uses column-pivoted QR and refuses rank-deficient features (InvalidArgument).
LsFit solveLs(const LsAccumulator& normalEquations, double lambdaB);

// ---- KL ----------------------------------------------------------------------------------------------------

struct KlValue {
  double objective = 0;
  VecD gradient;
  MatD hessian;  // only when asked for
};

// J(β), ∇J and (optionally) ∇²J over the examples; the masked Hessian restricts every key sum to ν_j > 0.
KlValue klObjective(const std::vector<FitExample>& examples, const VecD& beta, double lambdaB, bool withHessian);

struct KlFit {
  VecD beta;
  double objective = 0;
  double gradientNorm = 0;
  int iterations = 0;       // Newton steps plus L-BFGS steps
  std::string method;       // "newton" or "newton+lbfgs"
  bool converged = false;   // ‖∇J‖ < the gradient tolerance
};

// The stopping rule ‖∇J‖ < 1e-8 leaves β within ‖∇J‖/λ_min(∇²J) of the optimum; a smaller tolerance (the
// cross-check with the PyTorch reference uses 1e-13) costs one or two more Newton steps.
constexpr double kKlGradientTolerance = 1e-8;
// Newton steps before L-BFGS takes over (it also takes over when a step cannot decrease J). Tests set 0 to run
// the fallback from the start.
constexpr int kKlMaxNewtonSteps = 100;

KlFit fitKl(const std::vector<FitExample>& examples, const VecD& start, double lambdaB,
            Feedback& feedback = noFeedback(), double gradientTolerance = kKlGradientTolerance,
            int maxNewtonSteps = kKlMaxNewtonSteps);

// ---- quality -----------------------------------------------------------------------------------------------

struct FitQuality {
  double r2 = 0;     // 1 − Σ(f̂ − f̄)²/Σ f̄² over the loss rows (targets are centred per instance)
  double delta = 0;  // ‖f̂ − f̄‖∞ over the loss rows; plan ratios lie in e^{±2δ/eps}
  double residualMeanSquare = 0;  // R̂(β)
};

FitQuality fitQuality(const std::vector<FitExample>& examples, const VecD& beta);
// The same for predict-both's key side: ĝ = Ψβ_g against ḡ.
FitQuality keyFitQuality(const std::vector<FitExample>& examples, const VecD& keyBeta);

// ---- one layer, start to finish ----------------------------------------------------------------------------

enum class FitKind { Ls, Kl };
FitKind parseFitKind(const std::string& text);  // "ls" | "kl"
const char* fitKindName(FitKind kind);

struct LayerFit {
  FitKind kind = FitKind::Ls;
  VecD beta;        // the fit asked for (KL starts from LS)
  LsFit ls;         // always computed: the KL start, and λ = n_rows·λ_B
  std::optional<KlFit> kl;
  FitQuality quality;  // of `beta`
  // predict-both: β_g of the key side, its LS solve and quality.
  VecD keyBeta;
  std::optional<LsFit> keyLs;
  std::optional<FitQuality> keyQuality;
  double seconds = 0;  // features + solve (the teacher's duals are given)
};

// How close the compiled layer's plans come to the teacher's on the instances themselves: mean over instances
// of ‖A − A^T‖_F/‖A^T‖_F (docs/operators/asap.md#fitting). The teacher's plan is recovered from its dual:
// ASAP-0 of u for a column-ending teacher, two-sided row-ending ASAP of u for a row-ending one. With
// predict-both (keyBeta given) there is one plan, P(f̂, ĝ): asap0 and asap are both its error. The β = 0
// baselines use the sliced potentials' closures (Φβ = 0 whatever the family).
struct FitSetErrors {
  double asap0 = 0, asap = 0;                  // with β
  double baselineAsap0 = 0, baselineAsap = 0;  // β = 0 (zero dual in cost units)
};
FitSetErrors fitSetErrors(const std::vector<FitInstance>& instances, const MatD& slices, const VecD& beta,
                          const FitSettings& settings, bool rowEndingTeacher, const VecD& keyBeta = VecD());

// Features of every instance, the LS solve and, for KL, the Newton fit; progress per instance.
LayerFit fitLayer(const std::vector<FitInstance>& instances, const MatD& slices, const FitSettings& settings,
                  double lambdaB, FitKind kind, Feedback& feedback = noFeedback(),
                  double klGradientTolerance = kKlGradientTolerance);

}  // namespace tl
