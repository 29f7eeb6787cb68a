// Calibration instances from .npy stacks (docs/cli.md#asap-fit).
#include <string>

#include "common/errors.h"
#include "io/npy.h"
#include "ops/asap/asap_fit.h"

namespace tl {
namespace {

std::string shapeText(Eigen::Index a, Eigen::Index b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

}  // namespace

std::vector<FitInstance> readFitInstances(const std::string& qPath, const std::string& kPath,
                                          const std::string& dualPath, const std::optional<std::string>& maskPath) {
  const std::vector<MatD> Q = readNpyStack(qPath), K = readNpyStack(kPath);
  const MatD U = readNpyMatrix<double>(dualPath);
  if (Q.empty()) throw InvalidArgument(qPath + ": no head instances (N = 0)");
  const Eigen::Index N = Eigen::Index(Q.size()), n = Q[0].rows(), d = Q[0].cols();
  if (K.size() != Q.size() || K[0].rows() != n || K[0].cols() != d)
    throw InvalidArgument(kPath + ": K must have the shape of Q, [" + std::to_string(N) + ", " + std::to_string(n) +
                          ", " + std::to_string(d) + "]");
  if (U.rows() != N || U.cols() != n)
    throw InvalidArgument(dualPath + ": the duals must be [N, n] = " + shapeText(N, n) + ", got " +
                          shapeText(U.rows(), U.cols()));
  std::optional<MatD> masks;
  if (maskPath) {
    masks = readNpyMatrix<double>(*maskPath);
    if (masks->rows() != N || masks->cols() != n)
      throw InvalidArgument(*maskPath + ": the mask must be [N, n] = " + shapeText(N, n) + ", got " +
                            shapeText(masks->rows(), masks->cols()));
    if (!(masks->array() == 0 || masks->array() == 1).all())
      throw InvalidArgument(*maskPath + ": mask entries must be 1 (valid) or 0 (padding)");
  }
  std::vector<FitInstance> instances;
  for (Eigen::Index m = 0; m < N; ++m) {
    FitInstance in{Q[size_t(m)], K[size_t(m)], U.row(m).transpose(), std::nullopt};
    if (masks) in.mask = Mask(masks->row(m).transpose().array() != 0);
    instances.push_back(std::move(in));
  }
  return instances;
}

}  // namespace tl
