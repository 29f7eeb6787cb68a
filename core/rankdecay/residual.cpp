#include "rankdecay/residual.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>

namespace tl::rankdecay {
namespace {

VecD singularValues(const MatD& M) { return Eigen::BDCSVD<MatD>(M).singularValues(); }

// Eigenvalues of the smaller Gram matrix (MᵀM or MMᵀ), ascending: σ_k² of M. A symmetric eigensolver on the
// Gram matrix costs about a seventh of an SVD at the sizes rank decay uses (32 × 32 to 64 × 64), which is
// most of a run's time. Each eigenvalue carries an absolute error of about m·u·σ₁² (u the unit roundoff), so
// σ₁ keeps full relative accuracy but a small σ_k does not (see sigmaRatio).
VecD gramEigenvalues(const MatD& M) {
  const MatD gram = M.cols() <= M.rows() ? MatD(M.transpose() * M) : MatD(M * M.transpose());
  return Eigen::SelfAdjointEigenSolver<MatD>(gram, Eigen::EigenvaluesOnly).eigenvalues();
}

// Below this σ₂/σ₁ the Gram route's relative error (about m·u/(2(σ₂/σ₁)²), 2e-11 at m = 32) would pass
// round-off, so sigmaRatio answers with the SVD instead.
constexpr double kGramRatioFloor = 1e-2;

}  // namespace

MatD meanResidual(const MatD& X) { return X.rowwise() - X.colwise().mean(); }

double spectralNorm(const MatD& M) {
  if (M.size() == 0) return 0;
  return std::sqrt(std::max(0.0, gramEigenvalues(M).maxCoeff()));
}

double spectralNormOfProduct(const MatD& A, const MatD& B) {
  if (A.cols() > A.rows()) return spectralNorm(A * B);
  const MatD R = Eigen::HouseholderQR<MatD>(A).matrixQR().topRows(A.cols()).triangularView<Eigen::Upper>();
  return spectralNorm(R * B);
}

double outputResidualRatio(const MatD& X) {
  const double norm = spectralNorm(X);
  return norm > 0 ? spectralNorm(meanResidual(X)) / norm : 0.0;
}

double sigmaRatio(const MatD& M) {
  if (M.rows() < 2 || M.cols() < 2) return 0;
  const VecD lambda = gramEigenvalues(M);  // ascending
  const Eigen::Index top = lambda.size() - 1;
  if (lambda(top) > 0) {
    const double ratio = std::sqrt(std::max(0.0, lambda(top - 1)) / lambda(top));
    if (ratio >= kGramRatioFloor) return ratio;
  }
  const VecD sigma = singularValues(M);  // descending
  return sigma(0) > 0 ? sigma(1) / sigma(0) : 0.0;
}

MatD projectZeroMarginals(const MatD& Y) {
  const Eigen::RowVectorXd colMean = Y.colwise().mean();
  const VecD rowMean = Y.rowwise().mean();
  MatD out = Y.rowwise() - colMean;
  out.colwise() -= rowMean;
  out.array() += Y.mean();
  return out;
}

double compositeNorm(const MatD& M) {
  if (M.size() == 0) return 0;
  const double maxColSum = M.cwiseAbs().colwise().sum().maxCoeff();
  const double maxRowSum = M.cwiseAbs().rowwise().sum().maxCoeff();
  return std::sqrt(maxColSum * maxRowSum);
}

}  // namespace tl::rankdecay
