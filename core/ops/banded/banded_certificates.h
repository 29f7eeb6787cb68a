#pragma once
// Certificates of banded Sinkhorn (docs/operators/banded.md#certificates), all in float64:
//   - projective contraction (Prop. 4): per block of scores that is strictly positive, the Hilbert diameter Δ
//     and ρ_H = tanh²(Δ/4), the contraction factor of one full Sinkhorn step on that block; blocks touching a
//     masked zero are "n/a (not strictly positive)", never 1;
//   - observed contraction ρ_obs(t) of the actual iterates;
//   - the a-posteriori bias certificate (Prop. 5, Cor. 2): η_R, c_R = D_x z_Tᵀ η_R and the certified depth;
//   - the analytic memory ledger of the paper's Tables 5 and 6.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/banded/banded.h"

namespace tl {

// Δ = max over row pairs (i, i') and column pairs (j, j') of S_ij + S_i'j' − S_ij' − S_i'j, by the max form
// D[a,b] = max_i (S_ia − S_ib), Δ = max_{a,b} D[a,b] + D[b,a] over the shorter axis: O(n·m·min(n, m)).
// S are scores or log-plans of one strictly positive block (never the plan itself). 0 for a single row or column.
double projectiveDiameter(const MatD& S);

// What one block certifies at temperature eps. The margins are computed as sech² so that they stay exact
// where tanh² rounds to 1 (Δ beyond about 76 in float64).
struct Contraction {
  double delta;                 // Δ of S/eps
  double rhoH, oneMinusRhoH;    // tanh²(Δ/4), sech²(Δ/4)
  double rhoRange, oneMinusRhoRange;  // tanh²(Ω_S/2) ≥ ρ_H, with Ω_S = max − min of S/eps
  // Full steps for the Hilbert distance of the iterate to shrink by kPredictionReduction: 1 when ρ_H = 0,
  // none when the margin underflows or the count would exceed 9·10^18 (no useful prediction).
  std::optional<long long> predictedSteps;
};
constexpr double kPredictionReduction = 1e-6;

// A block of the tile grid, strip list or core rectangles: half-open ranges of the solved system's query and
// key indices (the valid tokens; real tokens with a dustbin). Δ and the score range are stored in logit
// units (scores QKᵀ/√d, not divided by eps), so a new eps re-evaluates ρ_H without touching the scores.
struct CertificateBlock {
  Eigen::Index row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  bool positive = false;  // every entry is on the support; otherwise n/a and the numbers below are 0
  double deltaLogit = 0, rangeLogit = 0;
  Contraction at(double eps) const;
};

struct ContractionCertificates {
  int tile = 0;
  Eigen::Index queries = 0, keys = 0;  // size of the grid
  bool dustbin = false;
  std::vector<CertificateBlock> tiles;   // every tile that touches the support, row-major
  std::vector<CertificateBlock> strips;  // each `tile`-row strip × all active keys (with a dustbin: and its key)
  std::vector<CertificateBlock> cores;   // core rectangle of each strip that is not positive (banded supports)
  std::optional<CertificateBlock> whole; // all active queries × keys, when positive and small enough
};

// Needs Q and K (V unused). Throws InvalidArgument for tile < 1 and for the parameter errors of bandedAttention.
ContractionCertificates contractionCertificates(const AttentionInput<double>& input, const BandedParams& params,
                                                int tile);

// The paper's Table 7 columns over the positive blocks of one granularity: the strips when every strip is
// positive (dense or dustbin supports, as in the paper), otherwise the interior tiles.
struct ContractionSummary {
  std::string granularity;  // "strips" | "tiles"
  size_t blocks = 0;
  double medianRhoH = 0, p95RhoH = 0, maxRhoH = 0, medianRhoRange = 0, maxRhoRange = 0;
};
ContractionSummary summarizeContraction(const ContractionCertificates& certificates, double eps);

// ρ_obs(t) = osc(v^(t+1) − v^(t)) / osc(v^(t) − v^(t−1)) over the active keys, for t = 1 … steps − 1 of the
// base and tail; empty ("converged") once osc(v^(t) − v^(t−1)) ≤ 1e-12·max(1, max|v|).
std::vector<std::optional<double>> observedContraction(const AttentionInput<double>& input,
                                                       const BandedParams& params);

// One row of the bias certificate, for tail depth R on the same base (loss L = Σ G_ij O_ij, G as given).
struct BiasRow {
  int R = 0;
  double etaNorm2 = 0;   // ‖η_R‖₂, the cotangent the tail leaves on the stopped base state
  double cInf = 0;       // ‖c_R‖∞ over (Q, K): the certified omitted gradient (V has none)
  double gradInf = 0;    // ‖g_surr‖∞ over (Q, K, V), for scale
  double gapInf = 0;     // ‖g_full − g_surr‖∞, by full backpropagation
  double residual = 0;   // ‖(g_full − g_surr) − c_R‖∞: the identity of Prop. 5, 0 up to rounding
};
struct BiasCertificate {
  std::vector<BiasRow> rows;        // in the order of `tails`
  double tau = 0;
  std::optional<int> selectedR;     // smallest R with ‖c_R‖∞ ≤ tau; empty: uncertified
};
// InvalidArgument for tau ≤ 0, an empty or negative tail list, R = 0 with base_steps = 0, or G not n_q × d_v.
// The depths run in parallel; Canceled when `feedback` is cancelled (checked between pullbacks).
BiasCertificate biasCertificate(const AttentionInput<double>& input, const BandedParams& params, const MatD& G,
                                const std::vector<int>& tails, double tau, Feedback& feedback = noFeedback());

// Everything the Certificates view shows for one banded run, computed together off the GUI thread. The bias
// certificate uses the mean loss of the paper's synthetic setting, L = (1/(n_q·d_v)) Σ Z_ij·O_ij with fixed
// Z ~ N(0, 1) (seed 0), and the depths R = 0, 1, 2, 4; it is left out (with a note) without V, or when full backpropagation would cost
// more than kReportBiasBudget support-entry visits.
struct BandedCertificateReport {
  double eps = 1;
  // Δ in logit units depends only on the scores, W, tile and dustbin: shared between reports that differ in
  // eps or steps only (the engine keeps the last one, so an eps slider does not recompute it).
  std::shared_ptr<const ContractionCertificates> contraction;
  std::vector<std::optional<double>> observed;
  std::optional<BiasCertificate> bias;
  std::string biasNote;  // why there is no bias certificate
};
constexpr double kReportBiasBudget = 1e8;
MatD defaultLossWeights(Eigen::Index rows, Eigen::Index cols);  // Z/(rows·cols), Z ~ N(0, 1), seed 0
// `contraction`, when given, must come from the same input, W, tile and dustbin; otherwise it is computed.
// Canceled when `feedback` is cancelled (a newer slider value), so stale work stops early.
BandedCertificateReport bandedCertificateReport(const AttentionInput<double>& input, const BandedParams& params,
                                                std::shared_ptr<const ContractionCertificates> contraction = nullptr,
                                                Feedback& feedback = noFeedback());

// The analytic ledger of Table 6 (and the storage of Table 5) for one head: each quantity under the direct
// four-plan and the one-reference backward, in bytes (b = bytesPerFloat) except the first row, a count.
struct LedgerRow {
  std::string quantity, formula;
  double direct = 0, oneReference = 0;
  bool bytes = true;
};
struct LedgerShape {
  long long L = 16384, W = 1024, tile = 128, d = 64, baseSteps = 15, tailSteps = 2, bytesPerFloat = 4;
};
long long bandSupportSize(long long L, long long W);  // L(2W+1) − W(W+1) for W < L
std::vector<LedgerRow> memoryLedger(const LedgerShape& shape);

}  // namespace tl
