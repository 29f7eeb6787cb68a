// Residual machinery of docs/operators/rank-decay.md#residuals: oracles O-1, O-2, O-3, O-7, O-19.
#include "rankdecay/residual.h"

#include <gtest/gtest.h>

#include <Eigen/QR>
#include <Eigen/SVD>
#include <cmath>
#include <utility>

#include "data/random.h"
#include "rankdecay/rank_decay_test_util.h"

namespace tl::rankdecay {
namespace {

TEST(Residual, ConstantRowsHaveNoResidualAndShiftsLeaveItUnchanged) {  // O-1
  SeededRandom rng(1);
  const int n = 16;
  const MatD x = gaussian(rng, 1, 8);
  const MatD constant = MatD::Ones(n, 1) * x;
  EXPECT_LE(spectralNorm(meanResidual(constant)), 1e-12 * std::sqrt(n) * (1 + x.norm()));
  const MatD X = gaussian(rng, n, 8);
  const MatD c = gaussian(rng, 1, 8);
  EXPECT_LE((meanResidual(X + MatD::Ones(n, 1) * c) - meanResidual(X)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LE((meanResidual(meanResidual(X)) - meanResidual(X)).cwiseAbs().maxCoeff(), 1e-14);  // idempotent
}

TEST(Residual, MeanIsTheSpectralArgmin) {  // O-2
  SeededRandom rng(2);
  const MatD X = gaussian(rng, 12, 5) + MatD::Ones(12, 1) * gaussian(rng, 1, 5, 3);
  const double best = spectralNorm(meanResidual(X));
  for (int k = 0; k < 300; ++k) {
    const MatD y = gaussian(rng, 1, 5, 3);
    EXPECT_LE(best, spectralNorm(X - MatD::Ones(12, 1) * y) + 1e-12);
  }
}

TEST(Residual, SigmaRatioOfRankOneAndDiagonal) {  // O-3
  SeededRandom rng(3);
  const MatD rankOne = gaussian(rng, 10, 1) * gaussian(rng, 1, 10);
  EXPECT_LE(sigmaRatio(rankOne), 1e-13);
  MatD D = MatD::Zero(6, 6);
  D(0, 0) = 1;
  D(1, 1) = 1e-7;
  EXPECT_NEAR(sigmaRatio(D), 1e-7, 1e-7 * 1e-12);
}

// M = U diag(σ) Vᵀ with random orthogonal U, V: a matrix whose singular values are known.
MatD withSingularValues(SeededRandom& rng, const VecD& sigma) {
  const int n = int(sigma.size());
  const MatD U = Eigen::HouseholderQR<MatD>(gaussian(rng, n, n)).householderQ();
  const MatD V = Eigen::HouseholderQR<MatD>(gaussian(rng, n, n)).householderQ();
  return U * sigma.asDiagonal() * V.transpose();
}

double svdRatio(const MatD& M) {
  const VecD sigma = Eigen::BDCSVD<MatD>(M).singularValues();
  return sigma(1) / sigma(0);
}

// sigmaRatio takes the Gram matrix's eigenvalues where σ₂/σ₁ ≥ 1e-2 and the SVD below: it must equal the SVD's
// ratio to 1e-10 (relative) on the whole range, down to products collapsed to rounding (σ₂/σ₁ ~ 1e-16).
TEST(Residual, FastSigmaRatioEqualsTheSvds) {
  SeededRandom rng(7);
  for (int n : {2, 8, 32, 50}) {
    for (int k = 0; k <= 16; ++k) {  // prescribed σ₂/σ₁ = 10^{-k}, the rest below it
      VecD sigma = VecD::Constant(n, 0.5 * std::pow(10.0, -k));
      sigma(0) = 3;
      sigma(1) = 3 * std::pow(10.0, -k);
      const MatD M = withSingularValues(rng, sigma);
      const double reference = svdRatio(M);
      EXPECT_NEAR(sigmaRatio(M), reference, 1e-10 * reference) << "n = " << n << ", 10^-" << k;
    }
  }
  // Products of doubly stochastic factors from random score matrices, as attention paths: ratios from about
  // 0.3 at depth 1 to rounding level at depth 12.
  const int n = 32;
  MatD product = MatD::Identity(n, n);
  for (int depth = 1; depth <= 12; ++depth) {
    MatD P = (gaussian(rng, n, n)).array().exp();
    for (int step = 0; step < 200; ++step) {  // Sinkhorn on the positive matrix
      P = P.array().colwise() / P.rowwise().sum().array();
      P = P.array().rowwise() / P.colwise().sum().array();
    }
    product = product * P;
    const double reference = svdRatio(product);
    EXPECT_NEAR(sigmaRatio(product), reference, 1e-10 * reference) << "depth " << depth;
  }
}

TEST(Residual, SpectralNormsEqualTheSvds) {
  SeededRandom rng(8);
  for (auto [rows, cols] : {std::pair{32, 64}, std::pair{64, 64}, std::pair{64, 16}, std::pair{7, 3}}) {
    const MatD M = gaussian(rng, rows, cols, 2.0);
    const double reference = Eigen::BDCSVD<MatD>(M).singularValues()(0);
    EXPECT_NEAR(spectralNorm(M), reference, 1e-13 * reference) << rows << "×" << cols;
  }
  // ‖A B‖₂ of a low-rank product (W_Q W_Kᵀ, W_V W_O) from the small QR factor.
  const MatD A = gaussian(rng, 64, 16), B = gaussian(rng, 16, 64);
  const double reference = Eigen::BDCSVD<MatD>(A * B).singularValues()(0);
  EXPECT_NEAR(spectralNormOfProduct(A, B), reference, 1e-13 * reference);
  EXPECT_NEAR(spectralNormOfProduct(B, A), spectralNorm(B * A), 1e-13 * reference);  // wide A: formed
}

TEST(Residual, OutputRatioIsBetweenZeroAndOne) {
  SeededRandom rng(4);
  const MatD X = gaussian(rng, 9, 4) + MatD::Ones(9, 1) * gaussian(rng, 1, 4, 2);
  const double rho = outputResidualRatio(X);
  EXPECT_GT(rho, 0);
  EXPECT_LE(rho, 1 + 1e-15);
  EXPECT_EQ(outputResidualRatio(MatD::Zero(3, 3)), 0);
}

TEST(Residual, ProjectorOntoZeroMarginals) {  // O-7
  SeededRandom rng(5);
  const int n = 11;
  const MatD Y = gaussian(rng, n, n), Z = gaussian(rng, n, n);
  const MatD QY = projectZeroMarginals(Y);
  const double scale = spectralNorm(Y);
  EXPECT_LE(QY.rowwise().sum().cwiseAbs().maxCoeff(), 1e-13 * scale);
  EXPECT_LE(QY.colwise().sum().cwiseAbs().maxCoeff(), 1e-13 * scale);
  EXPECT_LE((projectZeroMarginals(QY) - QY).cwiseAbs().maxCoeff(), 1e-13 * scale);
  EXPECT_NEAR(QY.cwiseProduct(Z).sum(), Y.cwiseProduct(projectZeroMarginals(Z)).sum(), 1e-12 * scale * Z.norm());
  const MatD U = MatD::Identity(n, n) - MatD::Constant(n, n, 1.0 / n);
  EXPECT_LE((QY - U * Y * U).cwiseAbs().maxCoeff(), 1e-13 * scale);
  EXPECT_LE(QY.norm(), Y.norm());
  // Q(R W Rᵀ) = R W Rᵀ for a centred R.
  const MatD R = gaussian(rng, n, 4).rowwise() - gaussian(rng, n, 4).colwise().mean();
  const MatD centred = R.rowwise() - R.colwise().mean();
  const MatD A = centred * gaussian(rng, 4, 4) * centred.transpose();
  EXPECT_LE((projectZeroMarginals(A) - A).norm(), 1e-12 * A.norm());
}

TEST(Residual, CompositeNormBoundsSpectralAndBreaksTriangle) {  // O-19
  SeededRandom rng(6);
  for (int k = 0; k < 100; ++k) {
    const MatD A = gaussian(rng, 7, 7);
    EXPECT_LE(spectralNorm(A), compositeNorm(A) + 1e-12);
  }
  MatD permutation = MatD::Zero(5, 5);
  for (int i = 0; i < 5; ++i) permutation(i, (i + 2) % 5) = 1;
  EXPECT_NEAR(spectralNorm(permutation), compositeNorm(permutation), 1e-14);
  MatD A(2, 2), B(2, 2);
  A << 1, 1, 0, 0;
  B << 1, 0, 1, 0;
  EXPECT_NEAR(compositeNorm(A), std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(compositeNorm(B), std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(compositeNorm(A + B), 3.0, 1e-15);
  EXPECT_GT(compositeNorm(A + B), compositeNorm(A) + compositeNorm(B));
}

}  // namespace
}  // namespace tl::rankdecay
