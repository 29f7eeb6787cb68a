#include "ops/banded/banded_certificates.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "common/parallel.h"
#include "data/random.h"
#include "ops/banded/banded_tail.h"

namespace tl {

namespace {

// Above this many operations the whole-system diameter (dense supports only) is left out.
constexpr double kWholeBlockBudget = 2e8;

// Quantile of sorted values by linear interpolation (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

// sech²(x) = 4e^{−2x}/(1 + e^{−2x})², exact where tanh²(x) has rounded to 1 (x ≥ 0).
double sech2(double x) {
  const double e = std::exp(-2 * x);
  return 4 * e / ((1 + e) * (1 + e));
}

double osc(const VecD& w, const Mask& active) {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (Eigen::Index j = 0; j < w.size(); ++j)
    if (active(j)) {
      lo = std::min(lo, w(j));
      hi = std::max(hi, w(j));
    }
  return hi >= lo ? hi - lo : 0.0;
}

double maxAbs(const MatD& m) { return m.size() ? m.cwiseAbs().maxCoeff() : 0.0; }

// Scores QKᵀ/√d (logit units) of rows [r0, r1) against the listed key rows.
MatD logits(const banded::System<double>& sys, Eigen::Index r0, Eigen::Index r1, Eigen::Index c0, Eigen::Index c1,
            bool withDustbinKey) {
  const Eigen::Index extra = withDustbinKey ? 1 : 0;
  MatD K(c1 - c0 + extra, sys.K.cols());
  K.topRows(c1 - c0) = sys.K.middleRows(c0, c1 - c0);
  if (withDustbinKey) K.row(c1 - c0) = sys.K.row(sys.K.rows() - 1);
  return sys.Q.middleRows(r0, r1 - r0) * K.transpose() / std::sqrt(double(sys.Q.cols()));
}

CertificateBlock certify(const banded::System<double>& sys, Eigen::Index r0, Eigen::Index r1, Eigen::Index c0,
                         Eigen::Index c1, bool positive, bool withDustbinKey = false) {
  CertificateBlock b{r0, r1, c0, c1, positive, 0, 0};
  if (positive) {
    const MatD S = logits(sys, r0, r1, c0, c1, withDustbinKey);
    b.deltaLogit = projectiveDiameter(S);
    b.rangeLogit = S.maxCoeff() - S.minCoeff();
  }
  return b;
}

}  // namespace

double projectiveDiameter(const MatD& S) {
  if (S.rows() < 2 || S.cols() < 2) return 0;
  const MatD A = S.cols() <= S.rows() ? S : MatD(S.transpose());  // square the shorter axis: columns of A
  const Eigen::Index m = A.cols();
  MatD D = MatD::Constant(m, m, -HUGE_VAL);  // D(a, b) = max_i (A_ia − A_ib)
  for (Eigen::Index a = 0; a < m; ++a)
    for (Eigen::Index b = 0; b < m; ++b) D(a, b) = (A.col(a) - A.col(b)).maxCoeff();
  return (D + D.transpose()).maxCoeff();
}

Contraction CertificateBlock::at(double eps) const {
  Contraction c;
  c.delta = deltaLogit / eps;
  const double range = rangeLogit / eps;
  c.rhoH = std::pow(std::tanh(c.delta / 4), 2);
  c.oneMinusRhoH = sech2(c.delta / 4);
  c.rhoRange = std::pow(std::tanh(range / 2), 2);
  c.oneMinusRhoRange = sech2(range / 2);
  // docs/operators/banded.md#certificates: ⌈log(reduction) / log(ρ_H)⌉ with log ρ_H = log1p(−margin).
  if (c.rhoH == 0) {
    c.predictedSteps = 1;
  } else if (c.oneMinusRhoH > 0) {
    // A margin below about 1e-18 predicts more steps than a count holds: no prediction, as when it underflows.
    const double steps = std::ceil(std::log(kPredictionReduction) / std::log1p(-c.oneMinusRhoH));
    if (steps < 9e18) c.predictedSteps = (long long)steps;
  }
  return c;
}

ContractionCertificates contractionCertificates(const AttentionInput<double>& input, const BandedParams& params,
                                                int tile) {
  if (tile < 1) throw InvalidArgument("banded certificates: tile must be at least 1 (got " + std::to_string(tile) + ")");
  const banded::System<double> sys = banded::makeSystem(input, params);
  ContractionCertificates out;
  out.tile = tile;
  out.dustbin = params.dustbin;
  out.queries = sys.realQueries;
  out.keys = sys.realKeys;
  const Eigen::Index W = params.W, nq = out.queries, nk = out.keys;
  // Among the real tokens the support is the band |i − j| ≤ W, or everything with a dustbin.
  auto farthest = [](Eigen::Index r0, Eigen::Index r1, Eigen::Index c0, Eigen::Index c1) {
    return std::max(std::abs(r0 - (c1 - 1)), std::abs((r1 - 1) - c0));
  };
  auto nearest = [](Eigen::Index r0, Eigen::Index r1, Eigen::Index c0, Eigen::Index c1) {
    if (r1 <= c0) return c0 - (r1 - 1);
    if (c1 <= r0) return r0 - (c1 - 1);
    return Eigen::Index(0);
  };
  for (Eigen::Index r0 = 0; r0 < nq; r0 += tile)
    for (Eigen::Index c0 = 0; c0 < nk; c0 += tile) {
      const Eigen::Index r1 = std::min(r0 + tile, nq), c1 = std::min(c0 + tile, nk);
      if (!params.dustbin && nearest(r0, r1, c0, c1) > W) continue;  // no support entry: not an active tile
      out.tiles.push_back(certify(sys, r0, r1, c0, c1, params.dustbin || farthest(r0, r1, c0, c1) <= W));
    }

  // Strips: active rows of each tile-row strip × all active keys.
  Eigen::Index activeKeys = 0;
  while (activeKeys < nk && sys.cols(activeKeys)) ++activeKeys;
  Eigen::Index activeQueries = 0;
  while (activeQueries < nq && sys.rows(activeQueries)) ++activeQueries;
  for (Eigen::Index r0 = 0; r0 < activeQueries; r0 += tile) {
    const Eigen::Index r1 = std::min(r0 + tile, activeQueries);
    const bool positive = params.dustbin || farthest(r0, r1, 0, activeKeys) <= W;
    out.strips.push_back(certify(sys, r0, r1, 0, activeKeys, positive, params.dustbin));
    if (positive) continue;
    // Core rectangle: the keys every row of the strip reaches, [r1 − 1 − W, r0 + W].
    const Eigen::Index c0 = std::max<Eigen::Index>(0, r1 - 1 - W), c1 = std::min(activeKeys, r0 + W + 1);
    if (c0 < c1) out.cores.push_back(certify(sys, r0, r1, c0, c1, true));
  }
  const double cost = double(activeQueries) * double(activeKeys) * double(std::min(activeQueries, activeKeys));
  const bool wholePositive = params.dustbin || farthest(0, activeQueries, 0, activeKeys) <= W;
  if (wholePositive && cost <= kWholeBlockBudget)
    out.whole = certify(sys, 0, activeQueries, 0, activeKeys, true, params.dustbin);
  return out;
}

ContractionSummary summarizeContraction(const ContractionCertificates& certificates, double eps) {
  const bool stripsPositive =
      !certificates.strips.empty() &&
      std::all_of(certificates.strips.begin(), certificates.strips.end(), [](const auto& b) { return b.positive; });
  ContractionSummary s;
  s.granularity = stripsPositive ? "strips" : "tiles";
  std::vector<double> rho, range;
  for (const CertificateBlock& b : stripsPositive ? certificates.strips : certificates.tiles)
    if (b.positive) {
      const Contraction c = b.at(eps);
      rho.push_back(c.rhoH);
      range.push_back(c.rhoRange);
    }
  std::sort(rho.begin(), rho.end());
  std::sort(range.begin(), range.end());
  s.blocks = rho.size();
  if (rho.empty()) return s;
  s.medianRhoH = quantile(rho, 0.5);
  s.p95RhoH = quantile(rho, 0.95);
  s.maxRhoH = rho.back();
  s.medianRhoRange = quantile(range, 0.5);
  s.maxRhoRange = range.back();
  return s;
}

std::vector<std::optional<double>> observedContraction(const AttentionInput<double>& input,
                                                       const BandedParams& params) {
  const banded::System<double> sys = banded::makeSystem(input, params);
  banded::Iterates<double> it = banded::startIterates(sys);
  banded::appendSteps(sys, it, params.baseSteps, true);
  banded::appendSteps(sys, it, params.tailSteps, false);
  // Centring adds a constant to v, which osc ignores; inactive keys (−inf) are left out.
  auto change = [&](int t) { return osc(it.v[size_t(t)] - it.v[size_t(t - 1)], sys.cols); };
  std::vector<std::optional<double>> out;
  bool converged = false;
  for (int t = 1; t + 1 <= it.steps(); ++t) {
    const VecD& v = it.v[size_t(t)];
    const double scale = std::max(1.0, sys.cols.select(v.array().abs(), 0.0).maxCoeff());
    const double before = change(t);
    converged = converged || before <= 1e-12 * scale;
    out.push_back(converged ? std::nullopt : std::optional<double>(change(t + 1) / before));
  }
  return out;
}

BiasCertificate biasCertificate(const AttentionInput<double>& input, const BandedParams& params, const MatD& G,
                                const std::vector<int>& tails, double tau, Feedback& feedback) {
  if (!(tau > 0)) throw InvalidArgument("banded bias certificate: tau must be > 0 (got " + std::to_string(tau) + ")");
  if (tails.empty()) throw InvalidArgument("banded bias certificate: no tail depths given");
  for (int R : tails) {
    if (R < 0) throw InvalidArgument("banded bias certificate: tail depth " + std::to_string(R) + " is negative");
    if (R + params.baseSteps < 1)
      throw InvalidArgument("banded bias certificate: R = 0 with base_steps = 0 leaves no step to certify");
  }
  if (!input.V) throw InvalidArgument("banded bias certificate: V is required");
  if (G.rows() != input.Q.rows() || G.cols() != input.V->cols())
    throw InvalidArgument("banded bias certificate: G is " + std::to_string(G.rows()) + "×" +
                          std::to_string(G.cols()) + " but the output is " + std::to_string(input.Q.rows()) + "×" +
                          std::to_string(input.V->cols()));
  const banded::System<double> sys = banded::makeSystem(input, params, &G);
  banded::Iterates<double> it = banded::startIterates(sys);
  const int T = params.baseSteps;
  banded::appendSteps(sys, it, T, true);
  banded::appendSteps(sys, it, *std::max_element(tails.begin(), tails.end()), false);
  const Eigen::Index nq = input.Q.rows(), nk = input.K.rows();
  auto onTokens = [&](const banded::Pullback<double>& pb, bool withV) {  // (dQ, dK[, dV]) on the caller's tokens
    std::vector<MatD> g{banded::toOriginal(sys, pb.dQ, true, nq), banded::toOriginal(sys, pb.dK, false, nk)};
    if (withV) g.push_back(banded::toOriginal(sys, pb.dV, false, nk));
    return g;
  };
  BiasCertificate out;
  out.tau = tau;
  out.rows.resize(tails.size());
  // The depths share only the recorded iterates (read-only): one per core, each writing its own row.
  parallelForEach(Eigen::Index(tails.size()), [&](Eigen::Index k) {
    const int R = tails[size_t(k)];
    feedback.throwIfCanceled();
    const auto surr = banded::pullBackOutput(sys, it, T, T + R);
    feedback.throwIfCanceled();
    const auto cert = banded::pullBackState(sys, it, T, surr.etaU, surr.etaV);
    feedback.throwIfCanceled();
    const auto full = banded::pullBackOutput(sys, it, 0, T + R);
    const auto gs = onTokens(surr, true), gc = onTokens(cert, false), gf = onTokens(full, true);
    BiasRow row;
    row.R = R;
    row.etaNorm2 = std::sqrt(surr.etaU.squaredNorm() + surr.etaV.squaredNorm());
    row.cInf = std::max(maxAbs(gc[0]), maxAbs(gc[1]));
    for (size_t x = 0; x < 3; ++x) {
      const MatD gap = gf[x] - gs[x];
      row.gradInf = std::max(row.gradInf, maxAbs(gs[x]));
      row.gapInf = std::max(row.gapInf, maxAbs(gap));
      row.residual = std::max(row.residual, maxAbs(x < 2 ? MatD(gap - gc[x]) : gap));
    }
    out.rows[size_t(k)] = row;
  });
  std::vector<BiasRow> byDepth = out.rows;
  std::sort(byDepth.begin(), byDepth.end(), [](const BiasRow& a, const BiasRow& b) { return a.R < b.R; });
  for (const BiasRow& row : byDepth)
    if (row.cInf <= tau) {
      out.selectedR = row.R;
      break;
    }
  return out;
}

MatD defaultLossWeights(Eigen::Index rows, Eigen::Index cols) {
  SeededRandom random(0);
  MatD G(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) G(i, j) = random.normal();
  return G / double(rows * cols);
}

BandedCertificateReport bandedCertificateReport(const AttentionInput<double>& input, const BandedParams& params,
                                                std::shared_ptr<const ContractionCertificates> contraction,
                                                Feedback& feedback) {
  BandedCertificateReport r;
  r.eps = params.eps;
  r.contraction = contraction ? std::move(contraction)
                              : std::make_shared<const ContractionCertificates>(
                                    contractionCertificates(input, params, params.tile));
  r.observed = observedContraction(input, params);
  const std::vector<int> tails{0, 1, 2, 4};
  const double entries = double(bandSupportSize(std::max(input.Q.rows(), input.K.rows()),
                                                params.dustbin ? input.Q.rows() + input.K.rows() : params.W));
  // Per depth, the three pullbacks (surrogate, state VJP, full) walk the support about 4·(steps + 1) times.
  double visits = 0;
  for (int R : tails) visits += entries * 4 * double(params.baseSteps + R + 1);
  if (!input.V) r.biasNote = "no values (V) in this source: no bias certificate";
  else if (params.baseSteps == 0) r.biasNote = "base_steps = 0: nothing is stopped, the surrogate is exact";
  else if (visits > kReportBiasBudget) r.biasNote = "problem too large for the live bias certificate; use tlens certify";
  else
    r.bias = biasCertificate(input, params, defaultLossWeights(input.Q.rows(), input.V->cols()), tails, 1e-5,
                             feedback);
  return r;
}

long long bandSupportSize(long long L, long long W) {
  const long long w = std::min(W, L - 1);
  return L * (2 * w + 1) - w * (w + 1);
}

std::vector<LedgerRow> memoryLedger(const LedgerShape& s) {
  const double b = double(s.bytesPerFloat), L = double(s.L);
  const double support = double(bandSupportSize(s.L, s.W));
  const double tile = double(s.tile) * double(s.tile);
  return {
      {"active support entries", "L(2W+1) − W(W+1)", support, support, false},
      {"logical materialised plan factors", "4|Ω|·b vs |Ω|·b", 4 * support * b, support * b},
      {"resident plan tile", "4B²·b vs B²·b", 4 * tile * b, tile * b},
      {"saved potentials (R=2)", "6L·b", 6 * L * b, 6 * L * b},
      {"backward scratch", "16L·b", 16 * L * b, 16 * L * b},
      {"base-plus-tail u/v history (upper)", "2(T+R+1)L·b",
       2 * double(s.baseSteps + s.tailSteps + 1) * L * b, 2 * double(s.baseSteps + s.tailSteps + 1) * L * b},
      {"QKV activations", "3Ld·b", 3 * L * double(s.d) * b, 3 * L * double(s.d) * b},
  };
}

}  // namespace tl
