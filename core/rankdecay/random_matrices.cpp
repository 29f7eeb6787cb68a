#include "rankdecay/random_matrices.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "rankdecay/normaliser.h"
#include "rankdecay/residual.h"

namespace tl::rankdecay {
namespace {

MatD gaussianScores(SeededRandom& rng, int n, double s) {
  MatD S(n, n);
  for (Eigen::Index i = 0; i < S.rows(); ++i)
    for (Eigen::Index j = 0; j < S.cols(); ++j) S(i, j) = s * rng.normal();
  return S;
}

void checkSpec(const RandomMatrixSpec& spec, const PathOptions& options) {
  if (spec.n < 2) throw InvalidArgument("random matrices: n must be ≥ 2");
  if (spec.depth < 1) throw InvalidArgument("random matrices: L (the largest depth) must be ≥ 1");
  if (!(spec.s >= 0) || !std::isfinite(spec.s)) throw InvalidArgument("random matrices: s must be finite and ≥ 0");
  if (options.paths < 1) throw InvalidArgument("random matrices: paths must be ≥ 1");
}

}  // namespace

std::vector<DepthSummary> randomMatrixPaths(const Operator& op, const RandomMatrixSpec& spec,
                                            const PathOptions& options, Feedback& feedback) {
  checkSpec(spec, options);
  SeededRandom rng(options.seed);
  std::vector<DepthSummary> depths;
  for (int t = 1; t <= spec.depth; ++t) {
    feedback.setProgress(double(t - 1) / spec.depth, "random products of depth " + std::to_string(t));
    DepthSummary depth;
    depth.t = t;
    for (int rep = 0; rep < options.paths; ++rep) {
      const std::vector<int> identities = spec.skip ? distinctSorted(rng, t / 2, t) : std::vector<int>{};
      MatD product = MatD::Identity(spec.n, spec.n);
      for (int i = 0; i < t; ++i) {
        feedback.throwIfCanceled();
        if (std::binary_search(identities.begin(), identities.end(), i)) continue;  // I leaves the product
        const NormalisedAttention factor = normaliseScores(op, gaussianScores(rng, spec.n, spec.s), feedback);
        depth.factorMarginalError = std::max({depth.factorMarginalError, factor.errors.rowMax, factor.errors.colMax});
        product = options.order == ProductOrder::Literal ? MatD(product * factor.plan) : MatD(factor.plan * product);
      }
      depth.values.push_back(sigmaRatio(product));
    }
    depth.box = summarise(depth.values);
    depths.push_back(std::move(depth));
  }
  feedback.setProgress(1.0, "random products done");
  return depths;
}

}  // namespace tl::rankdecay
