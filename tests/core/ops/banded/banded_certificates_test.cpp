// Certificates of banded Sinkhorn (docs/operators/banded.md#certificates) against the oracles of
// docs/operators/banded.md#checks: the a-posteriori identity and bound (10, 11), every property of the
// projective certificate (12), the observed contraction, and the memory ledger of the paper's Tables 5 and 6 (14).
#include "ops/banded/banded_certificates.h"

#include <gtest/gtest.h>

#include <cstdio>

#include <Eigen/SVD>

#include "ops/banded/banded_gradients.h"
#include "ops/banded/banded_tail.h"
#include "ops/banded/banded_test_util.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::throwsWith;

using test::bandedInput;
using test::bandedParams;
using test::maxAbs;

// Δ by its definition, O(n²m²).
double bruteForceDiameter(const MatD& S) {
  double best = 0;
  for (int i = 0; i < S.rows(); ++i)
    for (int k = 0; k < S.rows(); ++k)
      for (int j = 0; j < S.cols(); ++j)
        for (int l = 0; l < S.cols(); ++l) best = std::max(best, S(i, j) + S(k, l) - S(i, l) - S(k, j));
  return best;
}

double osc(const VecD& w) { return w.maxCoeff() - w.minCoeff(); }

// One full step on the column potentials of a dense block: Φ_col(v) = −LSE_i(S + u), u = −LSE_j(S + v).
VecD fullStep(const MatD& S, const VecD& v) {
  const VecD u = -((S.rowwise() + v.transpose()).array().exp().rowwise().sum().log()).matrix();
  return -((S.colwise() + u).array().exp().colwise().sum().log()).matrix().transpose();
}

// Oracle 10: g_full − g_surr = c_R to 1e-9·max(1, gap) for R in {0, 1, 2, 4}; the gap is not 0 (the test can fail).
TEST(BiasCertificate, IdentityWithFullBackpropagation) {
  const auto in = bandedInput(40, 40, 8, 8, 200);
  const MatD G = gaussian(40, 8, 203);
  const auto cert = biasCertificate(in, bandedParams(39, 15, 2), G, {0, 1, 2, 4}, 1e-5);
  ASSERT_EQ(cert.rows.size(), 4u);
  for (const BiasRow& row : cert.rows) {
    EXPECT_GT(row.gapInf, 0.0) << "R=" << row.R;
    EXPECT_LE(row.residual, 1e-9 * std::max(1.0, row.gapInf)) << "R=" << row.R;
  }
  // η decays with the tail depth on this dense, well-conditioned problem (the paper's Table 2, in kind)
  EXPECT_LT(cert.rows[3].etaNorm2, cert.rows[1].etaNorm2);
  EXPECT_LT(cert.rows[1].etaNorm2, cert.rows[0].etaNorm2);
}

// The same identity on a banded, masked and a dustbin problem; c_R has no V component (dV of the state VJP is 0).
TEST(BiasCertificate, IdentityOnBandedMaskedAndDustbinProblems) {
  auto masked = bandedInput(30, 30, 4, 3, 210);
  masked.mask = test::makeMask(std::vector<bool>(30, true));
  (*masked.mask)(3) = (*masked.mask)(17) = false;
  const MatD G = gaussian(30, 3, 213);
  for (const auto& [in, p] :
       {std::pair{bandedInput(30, 30, 4, 3, 220), bandedParams(4, 8, 2)}, std::pair{masked, bandedParams(3, 8, 1)},
        std::pair{bandedInput(30, 30, 4, 3, 230), bandedParams(2, 8, 2, 1.0, true)}}) {
    const auto cert = biasCertificate(in, p, G, {0, 1, 2, 3}, 1e-5);
    for (const BiasRow& row : cert.rows) EXPECT_LE(row.residual, 1e-9 * std::max(1.0, row.gapInf)) << "R=" << row.R;
  }
  const auto sys = banded::makeSystem(bandedInput(12, 12, 4, 3, 240), bandedParams(3, 4, 1), &G);
  auto it = banded::startIterates(sys);
  banded::appendSteps(sys, it, 4, true);
  const auto c = banded::pullBackState(sys, it, 4, VecD(VecD::Zero(12)), VecD(VecD::Ones(12)));
  EXPECT_EQ(maxAbs(c.dV), 0.0);
  EXPECT_GT(maxAbs(c.dQ), 0.0);
}

// Oracle 11: with C_T the spectral norm of D_x z_T (formed densely, one state VJP per unit seed),
// ‖g_full − g_surr‖₂ ≤ C_T‖η_R‖₂; the selected depth's gradient is within tau of full backpropagation.
TEST(BiasCertificate, BoundsTheGapAndSelectsTheFirstCertifiedDepth) {
  const int n = 8, d = 3;
  const auto in = bandedInput(n, n, d, 2, 250);
  const MatD G = gaussian(n, 2, 253);
  const BandedParams p = bandedParams(7, 6, 0);
  const auto sys = banded::makeSystem(in, p, &G);
  auto it = banded::startIterates(sys);
  banded::appendSteps(sys, it, 6, true);
  banded::appendSteps(sys, it, 4, false);
  MatD J(2 * n, 2 * n * d);  // rows: z_T = (u, v); columns: x = (Q, K)
  for (int k = 0; k < 2 * n; ++k) {
    VecD su = VecD::Zero(n), sv = VecD::Zero(n);
    (k < n ? su(k) : sv(k - n)) = 1;
    const auto row = banded::pullBackState(sys, it, 6, su, sv);
    J.row(k) << Eigen::Map<const VecD>(MatD(row.dQ.transpose()).data(), n * d).transpose(),
        Eigen::Map<const VecD>(MatD(row.dK.transpose()).data(), n * d).transpose();
  }
  const double CT = Eigen::JacobiSVD<MatD>(J).singularValues()(0);
  for (int R : {0, 1, 2, 4}) {
    const auto surr = banded::pullBackOutput(sys, it, 6, 6 + R);
    const auto full = banded::pullBackOutput(sys, it, 0, 6 + R);
    const double gap = std::sqrt((full.dQ - surr.dQ).squaredNorm() + (full.dK - surr.dK).squaredNorm() +
                                 (full.dV - surr.dV).squaredNorm());
    const double eta = std::sqrt(surr.etaU.squaredNorm() + surr.etaV.squaredNorm());
    EXPECT_LE(gap, CT * eta * (1 + 1e-12)) << "R=" << R;
  }
  // tau between ‖c_1‖∞ and ‖c_0‖∞ (c decays with R here): R* = 1, and its gradient is within tau of g_full.
  const auto probe = biasCertificate(in, p, G, {0, 1}, 1.0);
  ASSERT_LT(probe.rows[1].cInf, probe.rows[0].cInf);
  const double tau = std::sqrt(probe.rows[0].cInf * probe.rows[1].cInf);
  const auto cert = biasCertificate(in, p, G, {4, 2, 1, 0}, tau);
  ASSERT_TRUE(cert.selectedR.has_value());
  EXPECT_EQ(*cert.selectedR, 1);
  EXPECT_LE(cert.rows[2].gapInf, tau + 1e-12);
  EXPECT_FALSE(biasCertificate(in, p, G, {0, 1}, 1e-30).selectedR.has_value());  // uncertified
}

TEST(BiasCertificate, RefusesBadArguments) {
  const auto in = bandedInput(10, 10, 4, 3, 260);
  const MatD G = gaussian(10, 3, 263);
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] {
        biasCertificate(in, bandedParams(2, 3, 2), G, {0, 1}, 0.0);
      },
      {"tau must be > 0"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] {
        biasCertificate(in, bandedParams(2, 0, 2), G, {0, 1}, 1e-5);
      },
      {"R = 0"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { biasCertificate(in, bandedParams(2, 3, 2), MatD(G.leftCols(2)), {1}, 1e-5); }, {"G is 10×2"}));
}

// A newer slider value cancels the live report: the certificate stops with Canceled instead of finishing
// stale work, and the same call without cancellation gives the rows in the order of the tail list whatever the
// number of threads computing them.
TEST(BiasCertificate, StopsWhenCanceledAndKeepsTheOrderOfTheTails) {
  const auto in = bandedInput(30, 30, 4, 3, 270);
  const MatD G = gaussian(30, 3, 273);
  Feedback canceled;
  canceled.cancel();
  EXPECT_THROW(biasCertificate(in, bandedParams(5, 6, 2), G, {0, 1, 2, 4}, 1e-5, canceled), Canceled);
  EXPECT_THROW(bandedCertificateReport(in, bandedParams(5, 6, 2), nullptr, canceled), Canceled);
  const auto cert = biasCertificate(in, bandedParams(5, 6, 2), G, {4, 0, 2, 1}, 1e-5);
  ASSERT_EQ(cert.rows.size(), 4u);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(cert.rows[k].R, std::vector<int>({4, 0, 2, 1})[k]);
}

// Oracle 12.
TEST(ProjectiveCertificate, FastDiameterEqualsBruteForceAndHasTheSymmetries) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const int n = 2 + int(seed % 5), m = 2 + int((seed * 7) % 6);
    const MatD S = gaussian(n, m, 300 + seed, 2.0);
    const double delta = projectiveDiameter(S);
    const double tol = 1e-12 * std::max(1.0, delta);
    EXPECT_NEAR(delta, bruteForceDiameter(S), tol);
    EXPECT_NEAR(projectiveDiameter(S.transpose()), delta, tol);
    const MatD shifted = (S.colwise() + gaussian(n, 1, 400 + seed).col(0)).rowwise() + gaussian(1, m, 500 + seed).row(0);
    EXPECT_NEAR(projectiveDiameter(shifted), delta, tol);
    EXPECT_NEAR(projectiveDiameter(S / 0.3), delta / 0.3, 1e-12 * std::max(1.0, delta / 0.3));
    CertificateBlock block{0, n, 0, m, true, delta, S.maxCoeff() - S.minCoeff()};
    const Contraction c = block.at(1.0);
    EXPECT_GE(c.rhoH, 0.0);
    EXPECT_LE(c.rhoH, c.rhoRange);
    EXPECT_LT(c.rhoRange, 1.0);
    EXPECT_GT(c.oneMinusRhoRange, 0.0);
    EXPECT_LE(c.oneMinusRhoRange, c.oneMinusRhoH);
    EXPECT_NEAR(c.rhoH + c.oneMinusRhoH, 1.0, 1e-15);
  }
  // Rank-one kernel: S_ij = a_i + b_j.
  const MatD rankOne = gaussian(5, 1, 600).col(0).replicate(1, 4) + gaussian(1, 4, 601).row(0).replicate(5, 1);
  EXPECT_LE(projectiveDiameter(rankOne), 1e-14);
  EXPECT_EQ((CertificateBlock{0, 5, 0, 4, true, 0, 1}.at(1.0).rhoH), 0.0);
  EXPECT_EQ((CertificateBlock{0, 5, 0, 4, true, 0, 1}.at(1.0).predictedSteps), 1);
  // Saturation (errata 3b): tanh² rounds to 1, the margin does not.
  const Contraction far = CertificateBlock{0, 2, 0, 2, true, 200, 150}.at(1.0);
  EXPECT_EQ(far.rhoH, 1.0);
  EXPECT_GT(far.oneMinusRhoH, 0.0);
  EXPECT_NEAR(far.oneMinusRhoH, 4 * std::exp(-100.0), 1e-12 * 4 * std::exp(-100.0));
  EXPECT_FALSE(far.predictedSteps) << "about 3·10^44 steps: beyond any count, so no prediction";
  const Contraction slow = CertificateBlock{0, 2, 0, 2, true, 40, 30}.at(1.0);  // margin 8e-9
  ASSERT_TRUE(slow.predictedSteps);
  const double slowSteps = std::log(1e6) / (4 * std::exp(-20.0));  // about 1.7·10^9
  EXPECT_NEAR(double(*slow.predictedSteps), slowSteps, 1e-6 * slowSteps);
}

// Oracle 12: one full Sinkhorn step contracts the oscillation of v − v' by at most ρ_H on a positive block.
TEST(ProjectiveCertificate, BoundsTheContractionOfRandomBlocks) {
  double worst = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const int n = 2 + int(seed % 5), m = 2 + int((seed / 5) % 5);
    const MatD S = gaussian(n, m, 700 + seed, 1.5);
    const double rho = CertificateBlock{0, n, 0, m, true, projectiveDiameter(S), 0}.at(1.0).rhoH;
    for (uint64_t pair = 0; pair < 5; ++pair) {
      const VecD v = gaussian(m, 1, 9000 + 10 * seed + pair).col(0), w = gaussian(m, 1, 19000 + 10 * seed + pair).col(0);
      const double ratio = osc(fullStep(S, v) - fullStep(S, w)) / osc(v - w);
      EXPECT_LE(ratio, rho * (1 + 1e-9)) << "seed " << seed;
      worst = std::max(worst, rho > 0 ? ratio / rho : 0.0);
    }
  }
  EXPECT_GT(worst, 0.3);  // the bound is not vacuous on these blocks
}

// Tiles straddling the band edge are n/a (not strictly positive), interior tiles carry numbers; a dense
// support makes every tile and strip positive; Δ is stored in logit units (eps re-evaluates it).
TEST(ContractionCertificates, TileGridStripsAndCores) {
  const auto in = bandedInput(64, 64, 4, 2, 800);
  const auto band = contractionCertificates(in, bandedParams(16, 5, 2), 8);
  int interior = 0, na = 0;
  for (const CertificateBlock& b : band.tiles) {
    const Eigen::Index far = std::max(std::abs(b.row0 - (b.col1 - 1)), std::abs((b.row1 - 1) - b.col0));
    EXPECT_EQ(b.positive, far <= 16);
    (b.positive ? interior : na) += 1;
    if (b.positive) {
      const MatD S = test::referenceScores(in.Q.middleRows(b.row0, 8), in.K.middleRows(b.col0, 8));
      EXPECT_NEAR(b.deltaLogit, bruteForceDiameter(S), 1e-12 * std::max(1.0, b.deltaLogit));
      EXPECT_NEAR(b.at(0.5).delta, 2 * b.deltaLogit, 1e-12 * b.deltaLogit);
    } else {
      EXPECT_EQ(b.deltaLogit, 0.0);
    }
  }
  EXPECT_EQ(interior, 8 + 2 * 7);  // diagonal tiles and their first off-diagonal neighbours
  EXPECT_GT(na, 0);
  for (const CertificateBlock& s : band.strips) EXPECT_FALSE(s.positive);
  ASSERT_EQ(band.cores.size(), band.strips.size());
  EXPECT_EQ(band.cores[2].col0, 23 - 16);
  EXPECT_EQ(band.cores[2].col1, 16 + 16 + 1);
  EXPECT_FALSE(band.whole.has_value());
  EXPECT_EQ(summarizeContraction(band, 1.0).granularity, "tiles");
  EXPECT_EQ(summarizeContraction(band, 1.0).blocks, size_t(interior));

  const auto dense = contractionCertificates(in, bandedParams(63, 5, 2), 16);
  for (const CertificateBlock& b : dense.tiles) EXPECT_TRUE(b.positive);
  for (const CertificateBlock& s : dense.strips) EXPECT_TRUE(s.positive);
  ASSERT_TRUE(dense.whole.has_value());
  const auto summary = summarizeContraction(dense, 1.0);
  EXPECT_EQ(summary.granularity, "strips");
  EXPECT_EQ(summary.blocks, 4u);
  EXPECT_LE(summary.medianRhoH, summary.p95RhoH);
  EXPECT_LE(summary.p95RhoH, summary.maxRhoH);
  EXPECT_LE(summary.maxRhoH, summary.maxRhoRange);
  EXPECT_LT(summarizeContraction(dense, 4.0).maxRhoH, summary.maxRhoH);  // larger eps, smaller Δ/eps
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { contractionCertificates(in, bandedParams(63, 5, 2), 0); }, {"tile"}));
}

// On a dense support the observed contraction of the iterates stays below the whole block's ρ_H, and is
// reported as converged once the steps stall.
TEST(ContractionCertificates, ObservedContractionStaysBelowTheCertificate) {
  const auto in = bandedInput(30, 30, 4, 2, 900);
  const BandedParams p = bandedParams(29, 60, 2, 2.0);
  const auto certs = contractionCertificates(in, p, 8);
  ASSERT_TRUE(certs.whole.has_value());
  const double rho = certs.whole->at(p.eps).rhoH;
  const auto observed = observedContraction(in, p);
  ASSERT_EQ(observed.size(), size_t(61));
  int measured = 0;
  for (const auto& r : observed)
    if (r) {
      EXPECT_LE(*r, rho * (1 + 1e-9));
      ++measured;
    }
  EXPECT_GT(measured, 3);
  EXPECT_FALSE(observed.back().has_value());  // converged long before step 62
}

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// Oracle 14: Table 6 (L = 16384, W = 1024, B = 128, d = 64, T = 15, R = 2, float32) to the printed digits, and
// Table 5's plan storage (decimal MB) to two decimals.
TEST(MemoryLedger, ReproducesTheTables) {
  const auto rows = memoryLedger(LedgerShape{});
  const double MiB = 1024.0 * 1024.0;
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].direct, 32521216.0);
  EXPECT_FALSE(rows[0].bytes);
  EXPECT_EQ(fixed(rows[1].direct / MiB, 2), "496.23");
  EXPECT_EQ(fixed(rows[1].oneReference / MiB, 2), "124.06");
  EXPECT_EQ(fixed(rows[2].direct / MiB, 4), "0.2500");
  EXPECT_EQ(fixed(rows[2].oneReference / MiB, 4), "0.0625");
  EXPECT_EQ(fixed(rows[3].direct / MiB, 3), "0.375");
  EXPECT_EQ(fixed(rows[4].direct / MiB, 1), "1.0");  // errata 10b: backward scratch ≈ 16L·4 B
  EXPECT_EQ(fixed(rows[5].direct / MiB, 2), "2.25");
  EXPECT_EQ(fixed(rows[6].direct / MiB, 2), "12.00");
  const char* table5[3][2] = {{"3.15", "0.79"}, {"7.35", "1.84"}, {"15.76", "3.94"}};
  const long long lengths[3] = {512, 1024, 2048};
  for (int k = 0; k < 3; ++k) {
    LedgerShape s;
    s.L = lengths[k];
    s.W = 256;
    const auto r = memoryLedger(s);
    EXPECT_EQ(fixed(r[1].direct / 1e6, 2), table5[k][0]) << "L=" << s.L;
    EXPECT_EQ(fixed(r[1].oneReference / 1e6, 2), table5[k][1]) << "L=" << s.L;
  }
  EXPECT_EQ(bandSupportSize(512, 256), 196864);
  EXPECT_EQ(bandSupportSize(10, 50), 100);  // a band wider than the sequence is dense
}

}  // namespace
}  // namespace tl
