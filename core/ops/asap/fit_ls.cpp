// ASAP-LS: ridge regression of the centred teacher dual on the sliced features
// (docs/operators/asap.md#least-squares), accumulated as normal equations in float64.
#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <string>

#include "common/errors.h"
#include "ops/asap/asap_fit.h"

namespace tl {

LsAccumulator::LsAccumulator(Eigen::Index L) : G_(MatD::Zero(L, L)), h_(VecD::Zero(L)) {}

void LsAccumulator::add(const FitExample& example) { add(example.phi, example.target, example.lossRows); }

void LsAccumulator::add(const MatD& phi, const VecD& target, const Mask& lossRows) {
  if (phi.cols() != G_.rows())
    throw InvalidArgument("asap fit: features have " + std::to_string(phi.cols()) + " columns, the fit has L = " +
                          std::to_string(G_.rows()));
  // Rows outside the loss (padded queries under keep-queries) are zeroed, so they add nothing.
  const MatD rows = lossRows.cast<double>().matrix().asDiagonal() * phi;
  G_.noalias() += rows.transpose() * rows;
  h_.noalias() += rows.transpose() * target;
  rows_ += lossRows.count();
}

LsFit solveLs(const LsAccumulator& normalEquations, double lambdaB) {
  if (!(lambdaB >= 0) || !std::isfinite(lambdaB))
    throw InvalidArgument("asap fit: lambda_b must be a finite number ≥ 0 (got " + std::to_string(lambdaB) + ")");
  if (normalEquations.rows() == 0) throw InvalidArgument("asap fit: no regression rows (empty calibration set)");
  const Eigen::Index L = normalEquations.gram().rows();
  LsFit fit;
  fit.lambdaB = lambdaB;
  fit.rows = normalEquations.rows();
  // The normalised risk (1/n_rows)Σ‖Φβ − f̄‖² + λ_B‖β‖² has the stacked solve's ridge λ = n_rows·λ_B.
  fit.lambda = double(fit.rows) * lambdaB;
  if (lambdaB > 0) {
    const MatD A = normalEquations.gram() + fit.lambda * MatD::Identity(L, L);
    const Eigen::LLT<MatD> cholesky(A);
    if (cholesky.info() != Eigen::Success)
      throw ResourceError("asap fit: the ridge normal equations are not positive definite (features not finite?)");
    fit.beta = cholesky.solve(normalEquations.moment());
    fit.solver = "cholesky";
    return fit;
  }
  // λ = 0 needs full column rank (Σ_m (|J_m| − 1) ≥ L and no redundant slices).
  const Eigen::ColPivHouseholderQR<MatD> qr(normalEquations.gram());
  if (qr.rank() < L)
    throw InvalidArgument("asap fit: with lambda_b = 0 the features must have full rank, but they have rank " +
                          std::to_string(qr.rank()) + " < L = " + std::to_string(L) +
                          " (more calibration tokens, fewer slices, or lambda_b > 0)");
  fit.beta = qr.solve(normalEquations.moment());
  fit.solver = "qr";
  return fit;
}

}  // namespace tl
