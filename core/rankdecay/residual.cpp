#include "rankdecay/residual.h"

#include <Eigen/SVD>
#include <cmath>

namespace tl::rankdecay {
namespace {

VecD singularValues(const MatD& M) { return Eigen::BDCSVD<MatD>(M).singularValues(); }

}  // namespace

MatD meanResidual(const MatD& X) { return X.rowwise() - X.colwise().mean(); }

double spectralNorm(const MatD& M) {
  if (M.size() == 0) return 0;
  return singularValues(M)(0);
}

double outputResidualRatio(const MatD& X) {
  const double norm = spectralNorm(X);
  return norm > 0 ? spectralNorm(meanResidual(X)) / norm : 0.0;
}

double sigmaRatio(const MatD& M) {
  if (M.rows() < 2 || M.cols() < 2) return 0;
  const VecD sigma = singularValues(M);
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
